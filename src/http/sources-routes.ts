import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import { isSourceKey } from '../sources/keys.js';
import type { SourceStore } from '../sources/source-store.js';

/**
 * `GET|HEAD /internal/sources/{key}.tar.gz` (spec §4): the blob the in-sandbox agent pulls. The
 * key's 128 random bits are the authorization; bearer auth comes from the global middleware. No
 * listings: only an exact, valid key name can match anything. Other methods are 405 (method-guard).
 * With an object store behind (`sources.backend: s3`) the agent pulls a pre-signed URL instead and
 * this route serves nothing: every key is 404.
 */
export function sourcesRoutes(store: SourceStore): FastifyPluginAsync {
  return async (app) => {
    app.route<{ Params: { file: string } }>({
      method: ['GET', 'HEAD'],
      url: '/internal/sources/:file',
      handler: async (request, reply) => serve(store, request, reply),
    });
  };
}

const SUFFIX = '.tar.gz';

async function serve(
  store: SourceStore,
  request: FastifyRequest<{ Params: { file: string } }>,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const { file } = request.params;
  const key = file.endsWith(SUFFIX) ? file.slice(0, -SUFFIX.length) : '';
  // One answer for a bad name and a missing blob: nothing here tells a guesser which it was.
  const missing = new AppError(404, 'not_found', 'source blob not found');
  if (store.backend !== 'served' || !isSourceKey(key)) throw missing;
  // Open before sizing: a blob removed in between then answers 404, not a short body.
  const stream = request.method === 'HEAD' ? undefined : await store.open(key);
  const size = await store.size(key).catch((err: unknown) => {
    stream?.destroy();
    throw err;
  });
  if (size === undefined || (request.method !== 'HEAD' && stream === undefined)) {
    stream?.destroy();
    throw missing;
  }
  void reply
    .status(200)
    .header('content-type', 'application/gzip')
    .header('content-length', String(size))
    // Keys are never reused, but the route is authenticated: keep it out of shared caches.
    .header('cache-control', 'private, no-store')
    .header('x-content-type-options', 'nosniff');
  return stream === undefined ? reply.send() : reply.send(stream);
}
