import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import type { FastifyInstance } from 'fastify';
import type { PlatformInfo } from '../services/platform-info.js';
import * as api from './api-schemas.js';

/** `GET /v1/templates`: what this installation can run (issue 15 item 7; MCP get_platform_info). */
export function templatesRoutes(info: () => PlatformInfo) {
  return async function routes(fastify: FastifyInstance): Promise<void> {
    const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();
    app.get('/v1/templates', { schema: api.getTemplates }, async () => info());
  };
}
