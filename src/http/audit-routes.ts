import type { FastifyInstance } from 'fastify';
import { adminOnly } from '../auth/guards.js';
import { AUDIT_DEFAULT_LIMIT, AUDIT_MAX_LIMIT, type AuditTrail } from '../services/audit-trail.js';

const auditQuery = {
  type: 'object',
  properties: {
    actor: { type: 'string', minLength: 1 },
    action: { type: 'string', enum: ['deploy', 'delete', 'suspend', 'resume', 'update'] },
    app: { type: 'string', minLength: 1 },
    limit: { type: 'integer', minimum: 1, maximum: AUDIT_MAX_LIMIT, default: AUDIT_DEFAULT_LIMIT },
  },
  additionalProperties: false,
} as const;

/**
 * `GET /v1/audit` (spec §4): admins only, newest first, filtered by actor, action and app. Read
 * only: no route changes or deletes an event.
 */
export function auditRoutes(trail: AuditTrail) {
  return async function routes(app: FastifyInstance): Promise<void> {
    app.get(
      '/v1/audit',
      // Admin first, so that a non-admin learns nothing, not even what a valid query looks like.
      { preValidation: adminOnly, schema: { querystring: auditQuery } },
      async (request) => {
        const query = request.query as {
          actor?: string;
          action?: string;
          app?: string;
          limit: number;
        };
        return { events: trail.list(query) };
      },
    );
  };
}
