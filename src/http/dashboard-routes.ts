import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { notFound } from '../errors.js';
import { dashboardBundle, type DashboardAsset } from './dashboard-build.js';

/**
 * The dashboard (spec §1, §5): the page at `/` and its content-hashed assets under `/assets/`,
 * always open (the page signs in against the API itself). App hosts never get here: the listener
 * hands them to the app router before fastify.
 */
export async function dashboardRoutes(app: FastifyInstance): Promise<void> {
  const bundle = await dashboardBundle();
  const policy = contentSecurityPolicy(connectSources(app));

  app.get('/', async (request, reply) => {
    // Revalidated on every load, so a new build's asset names reach the browser at once.
    void reply.header('cache-control', 'no-cache');
    return send(request, reply, bundle.index, policy);
  });

  app.get<{ Params: { file: string } }>(
    '/assets/:file',
    { schema: { params: assetParams } },
    async (request, reply) => {
      const found = bundle.assets.get(request.params.file);
      if (!found) throw notFound('asset');
      void reply.header('cache-control', 'public, max-age=31536000, immutable');
      return send(request, reply, found, policy);
    },
  );
}

/** Nothing inline, nothing from elsewhere; the OIDC issuer only for the sign-in's own requests. */
function contentSecurityPolicy(connect: string[]): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    `connect-src ${["'self'", ...connect].join(' ')}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** In oidc mode the page talks to the issuer (discovery, token endpoint) from the browser. */
function connectSources(app: FastifyInstance): string[] {
  const { issuer } = app.config.auth.oidc;
  if (!app.auth.enabled || app.auth.modeName !== 'oidc' || !issuer) return [];
  return [new URL(issuer).origin];
}

function send(
  request: FastifyRequest,
  reply: FastifyReply,
  file: DashboardAsset,
  policy: string,
): FastifyReply {
  const gzip = /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''));
  void reply.headers({
    'content-type': file.contentType,
    'content-security-policy': policy,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    vary: 'accept-encoding',
  });
  if (gzip) void reply.header('content-encoding', 'gzip');
  return reply.send(gzip ? file.gzip : file.body);
}

const assetParams = {
  type: 'object',
  required: ['file'],
  properties: {
    file: { type: 'string', pattern: '^[A-Za-z0-9_-]+\\.(js|css|svg)$', maxLength: 100 },
  },
} as const;
