import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import type { FastifyInstance } from 'fastify';
import { adminOnly, requireIdentity } from '../auth/guards.js';
import type { AppService } from '../services/app-service.js';
import * as api from './api-schemas.js';

/**
 * `GET /v1/audit` (spec §4): admins only, newest first, filtered by actor, action and app.
 * `GET /v1/apps/{id}/audit`: one app's feed, for its owner (and admins); another owner's app is
 * not found. Read only: no route changes or deletes an event.
 */
export function auditRoutes(apps: AppService) {
  const trail = apps.audit;
  return async function routes(fastify: FastifyInstance): Promise<void> {
    const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();
    app.get(
      '/v1/audit',
      // Admin first, so that a non-admin learns nothing, not even what a valid query looks like.
      { preValidation: adminOnly, schema: api.listAuditEvents },
      async (request) => ({ events: trail.list(request.query) }),
    );

    app.get('/v1/apps/:id/audit', { schema: api.listAppAuditEvents }, async (request) => {
      const app = apps.get(requireIdentity(request), request.params.id);
      return { events: trail.ofApp(app, request.query.limit) };
    });
  };
}
