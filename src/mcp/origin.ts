import type { FastifyRequest } from 'fastify';
import { isOwnOrigin } from '../auth/own-origin.js';

/**
 * Which web origin a request to /mcp comes from. Browsers send `Origin` on every cross-origin
 * request (and on same-origin POSTs); other MCP clients send none. A page on a foreign origin must
 * not drive the tools: without auth it would act as the local user (DNS rebinding, or simply a
 * page on another local port), and with auth a browser client is trusted only when the operator
 * listed its origin in `mcp.allowedOrigins`.
 */
export type OriginKind = 'none' | 'same' | 'listed' | 'foreign';

export function originKind(request: FastifyRequest, listed: ReadonlySet<string>): OriginKind {
  const origin = request.headers.origin;
  if (origin === undefined) return 'none';
  if (listed.has(origin)) return 'listed';
  return isOwnOrigin(origin, request) ? 'same' : 'foreign';
}

/** What `OPTIONS /mcp` grants an allowed origin: the streamable HTTP methods and headers. */
export function preflightHeaders(origin: string): Record<string, string> {
  return {
    ...corsHeaders(origin),
    'access-control-allow-methods': 'POST, GET, DELETE',
    'access-control-allow-headers':
      'authorization, content-type, mcp-protocol-version, mcp-session-id, last-event-id',
    'access-control-max-age': '600',
  };
}

/** On every answer to an allowed origin, so that its page may read the answer. */
export function corsHeaders(origin: string): Record<string, string> {
  return {
    'access-control-allow-origin': origin,
    'access-control-expose-headers': 'mcp-session-id',
    vary: 'Origin',
  };
}
