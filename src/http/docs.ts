import fastifySwagger, { type StaticDocumentSpec } from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';

export const DOCS_PREFIX = '/api/docs';

/**
 * The UI loads only what swagger-ui ships in its package; this policy makes a browser refuse
 * anything else, so a future template change cannot quietly pull assets from a CDN.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "img-src 'self' data:",
  // Swagger UI sets style attributes from its scripts.
  "style-src 'self' 'unsafe-inline'",
  "script-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "frame-ancestors 'self'",
].join('; ');

/** api/openapi.yaml, found from the package root so any working directory works. */
export function openApiPath(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('openapi: no package.json above src/http/docs.ts');
    dir = parent;
  }
  return join(dir, 'api', 'openapi.yaml');
}

/** Swagger UI at /api/docs/ from local assets, and the raw spec at /api/docs/openapi.yaml. */
export async function docsPlugin(app: FastifyInstance): Promise<void> {
  const path = openApiPath();
  const text = await readFile(path, 'utf8');
  const document: unknown = parseYaml(text);
  if (typeof document !== 'object' || document === null || !('openapi' in document)) {
    throw new Error(`openapi: ${path} is not an OpenAPI document`);
  }

  await app.register(fastifySwagger, {
    mode: 'static',
    specification: { document: document as StaticDocumentSpec['document'] },
  });
  await app.register(fastifySwaggerUi, {
    routePrefix: DOCS_PREFIX,
    theme: { title: 'Slipway API' },
    // Shows `x-slipway-pending` on operations that the server does not serve yet.
    uiConfig: { showExtensions: true },
    staticCSP: CONTENT_SECURITY_POLICY,
    // Relative asset URLs in the page resolve correctly only under the trailing slash.
    uiHooks: { onRequest: redirectBarePrefix },
    // Never let the UI send the spec to the public validator service.
    validatorUrl: false,
  });

  app.get(`${DOCS_PREFIX}/openapi.yaml`, async (_request, reply) =>
    reply.type('application/yaml; charset=utf-8').send(text),
  );
}

async function redirectBarePrefix(
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply | undefined> {
  const [pathname, query] = splitQuery(request.url);
  // Returning the reply tells fastify the hook answered and the route handler must not run.
  if (pathname === DOCS_PREFIX) return reply.redirect(`${DOCS_PREFIX}/${query}`, 302);
  return undefined;
}

function splitQuery(url: string): [string, string] {
  const at = url.indexOf('?');
  return at < 0 ? [url, ''] : [url.slice(0, at), url.slice(at)];
}
