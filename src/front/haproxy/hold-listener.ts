import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import { rmSync } from 'node:fs';
import { showPeer } from '../relayed-connections.js';

/**
 * Where a slot that no route names sends what still arrives there: the GETs the proxy retries
 * after the app's sandbox went (a crash, a switch, a suspend). They were on the direct path, so
 * their forwarded headers are the proxy's own: the visitor's address is taken back from them, and
 * the request goes to the control plane's server as any other, whose router holds it until the
 * app serves again.
 */
export async function listenForStragglers(
  path: string,
  server: Server | HttpsServer,
  opts: { encrypted: boolean },
): Promise<Server> {
  rmSync(path, { force: true });
  const hold = createServer((req: IncomingMessage, res: ServerResponse) => {
    takeBackVisitor(req);
    server.emit('request', req, res);
  });
  // Under TLS the visitor's request arrived encrypted at the proxy, which ended TLS: the router
  // and the access cookies must see it as the HTTPS request it was.
  if (opts.encrypted) {
    hold.on('connection', (socket) => Object.defineProperty(socket, 'encrypted', { value: true }));
  }
  await new Promise<void>((resolve, reject) => {
    hold.once('error', reject);
    hold.listen(path, () => resolve());
  });
  return hold;
}

/** Undoes the proxy's X-Forwarded-* (haproxy-config.ts): the router adds its own. */
function takeBackVisitor(req: IncomingMessage): void {
  const chain = String(req.headers['x-forwarded-for'] ?? '')
    .split(',')
    .map((hop) => hop.trim())
    .filter((hop) => hop !== '');
  const visitor = chain.pop() ?? '0.0.0.0';
  if (chain.length > 0) req.headers['x-forwarded-for'] = chain.join(', ');
  else delete req.headers['x-forwarded-for'];
  delete req.headers['x-forwarded-host'];
  delete req.headers['x-forwarded-proto'];
  showPeer(req.socket, { address: visitor, port: 0 });
}
