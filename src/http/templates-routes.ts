import type { FastifyInstance } from 'fastify';
import type { PlatformInfo } from '../services/platform-info.js';

/** `GET /v1/templates`: what this installation can run (issue 15 item 7; MCP get_platform_info). */
export function templatesRoutes(info: () => PlatformInfo) {
  return async function routes(app: FastifyInstance): Promise<void> {
    app.get('/v1/templates', async () => info());
  };
}
