import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import type { FastifyInstance } from 'fastify';
import { adminOnly, requireIdentity } from '../auth/guards.js';
import { ADMIN_AUDIT_ACTIONS, APP_AUDIT_ACTIONS } from '../persistence/store.js';
import type { AppService } from '../services/app-service.js';
import { AUDIT_DEFAULT_LIMIT, AUDIT_MAX_LIMIT } from '../services/audit-trail.js';
import { appIdParams } from './apps-schemas.js';

const limit = {
  type: 'integer',
  minimum: 1,
  maximum: AUDIT_MAX_LIMIT,
  default: AUDIT_DEFAULT_LIMIT,
} as const;

const auditQuery = {
  type: 'object',
  properties: {
    actor: { type: 'string', minLength: 1 },
    action: { type: 'string', enum: [...APP_AUDIT_ACTIONS, ...ADMIN_AUDIT_ACTIONS] },
    app: { type: 'string', minLength: 1 },
    limit,
  },
  additionalProperties: false,
} as const;

const appAuditQuery = {
  type: 'object',
  properties: { limit },
  additionalProperties: false,
} as const;

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
      { preValidation: adminOnly, schema: { querystring: auditQuery } },
      async (request) => ({ events: trail.list(request.query) }),
    );

    app.get(
      '/v1/apps/:id/audit',
      { schema: { params: appIdParams, querystring: appAuditQuery } },
      async (request) => {
        const app = apps.get(requireIdentity(request), request.params.id);
        return { events: trail.ofApp(app, request.query.limit) };
      },
    );
  };
}
