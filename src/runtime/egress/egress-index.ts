import type net from 'node:net';
import type { EgressRequest } from './egress-request.js';
import type { Access } from './egress-rules.js';

const READ_METHODS = new Set(['GET', 'HEAD']);

/**
 * Why a request may not use a package index it reaches only as an index (during an install), or
 * undefined. An index is there to be read: what a client needs to install (GET and HEAD, without a
 * body), never to publish, unpublish or create users.
 */
export function indexMisuse(access: Access | undefined, req: EgressRequest): string | undefined {
  if (access === 'index-tunnel' && req.kind !== 'connect') {
    return 'the package index speaks https: reach it with CONNECT';
  }
  if (access !== 'index-read') return undefined;
  if (req.kind === 'connect' || !READ_METHODS.has(req.method)) {
    const method = req.kind === 'connect' ? 'CONNECT' : req.method;
    return `the package index may only be read during an install (GET or HEAD), not ${method}`;
  }
  if (req.hasBody) return 'a request to the package index may not carry a body';
  return undefined;
}

/**
 * The one request the gate read goes up, its answer comes back, and nothing else the client sends
 * travels: a second request on the same connection would pass unread.
 */
export function readOnly(client: net.Socket, upstream: net.Socket): void {
  // Read and dropped: a client waiting to send would never see its answer's end otherwise.
  client.resume();
  client.once('close', () => upstream.destroy());
  upstream.once('close', () => {
    if (!upstream.readableEnded) client.destroy();
  });
  upstream.pipe(client);
}
