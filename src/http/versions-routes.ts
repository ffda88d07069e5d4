import { logLineText } from '../actors/log-ring.js';
import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import type { FastifyInstance } from 'fastify';
import type { AppRegistry } from '../actors/registry.js';
import { requireIdentity } from '../auth/guards.js';
import type { AppService } from '../services/app-service.js';
import { deployFailure } from '../services/deploy-failure.js';
import { appView } from '../services/app-view.js';
import type { AppSummary } from '../persistence/store.js';
import * as api from './api-schemas.js';
import { StageClock } from '../stage-clock.js';

const LAST_LOG_LINES = 20;

/** `GET /v1/apps/{id}/versions` and `POST /v1/apps/{id}/rollback` (spec §4). */
export function versionsRoutes(service: AppService, registry: AppRegistry) {
  const view = (app: AppSummary) => appView(app, registry.activity(app.id));
  return async function routes(fastify: FastifyInstance): Promise<void> {
    const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();
    app.get('/v1/apps/:id/versions', { schema: api.listAppVersions }, async (request) => ({
      items: service.versions(requireIdentity(request), request.params.id),
    }));

    app.post('/v1/apps/:id/rollback', { schema: api.rollbackApp }, async (request, reply) => {
      const { version } = request.body;
      const clock = new StageClock();
      const { app: rolled, version: made } = await service.rollback(
        requireIdentity(request),
        request.params.id,
        version,
        clock,
      );
      // Like a deploy that failed: the diagnosis and the last lines, not a 200 with bad news.
      const logs = registry.logs(rolled.id, made).slice(-LAST_LOG_LINES).map(logLineText);
      const failure = deployFailure(rolled, made, logs);
      if (failure) throw failure;
      clock.mark('reply');
      reply.header('server-timing', clock.header());
      if (rolled.phase === 'Ready' && rolled.url) return reply.status(200).send(view(rolled));
      return reply.status(202).send({ ...view(rolled), status_url: `/v1/apps/${rolled.id}` });
    });
  };
}
