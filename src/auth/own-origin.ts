import type { FastifyRequest } from 'fastify';

/**
 * Whether `origin` is the control plane's own: the origin of `server.baseURL`, or the host the
 * request was sent to. The scheme is not compared with the request's: behind a TLS proxy the
 * browser says https while this server sees http.
 */
export function isOwnOrigin(origin: string, request: FastifyRequest): boolean {
  // `null` (a sandboxed frame, a file) and anything with a path are no origin of ours.
  if (!URL.canParse(origin)) return false;
  const url = new URL(origin);
  if (url.origin !== origin || !/^https?:$/.test(url.protocol)) return false;
  const base = request.server.config.server.baseURL;
  if (base !== undefined && new URL(base).origin === origin) return true;
  return url.host === request.headers.host?.toLowerCase();
}
