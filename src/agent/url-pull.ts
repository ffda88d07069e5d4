import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Duplex, Readable } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';

/** From the request until the response head; the body is then bounded by the unpack's caps. */
const HEAD_TIMEOUT_MS = 30_000;
/** A body that stalls this long is given up on. */
const IDLE_TIMEOUT_MS = 30_000;

/** An HTTP proxy the GET goes through (in a pod: the agent's relay to the egress gate). */
export interface Proxy {
  host: string;
  port: number;
}

/**
 * GET of a source by URL (a pre-signed object-store URL, in a Kubernetes pod): the same answer
 * shape as the source door's, so the unpack does not care where the bytes come from. Through
 * `proxy` when given, as every other connection out of a pod: an absolute-URI request for http,
 * a CONNECT tunnel for https. The URL's query carries its signature: it is never logged, and
 * errors name only its host.
 */
export function getUrl(
  url: string,
  proxy?: Proxy,
): Promise<{ statusCode: number; body: Readable }> {
  const target = new URL(url);
  if (target.protocol !== 'https:' && target.protocol !== 'http:') {
    return Promise.reject(new Error(`source URL scheme ${target.protocol} is not http(s)`));
  }
  const tunnel = proxy && target.protocol === 'https:' ? connectTunnel(target, proxy) : undefined;
  return (tunnel ?? Promise.resolve(undefined)).then(
    (socket) =>
      new Promise((resolve, reject) => {
        const req = open(target, proxy, socket);
        const head = setTimeout(
          () =>
            req.destroy(new Error(`no answer from ${target.host} within ${HEAD_TIMEOUT_MS} ms`)),
          HEAD_TIMEOUT_MS,
        );
        req.setTimeout(IDLE_TIMEOUT_MS, () =>
          req.destroy(new Error(`source download from ${target.host} stalled`)),
        );
        req.on('error', (err) => {
          clearTimeout(head);
          reject(new Error(`cannot fetch the source from ${target.host}: ${err.message}`));
        });
        req.on('response', (res: IncomingMessage) => {
          clearTimeout(head);
          resolve({ statusCode: res.statusCode ?? 0, body: res });
        });
        req.end();
      }),
  );
}

function open(target: URL, proxy: Proxy | undefined, tunnel: Duplex | undefined): ClientRequest {
  if (tunnel) return httpsRequest(target, { method: 'GET', createConnection: () => tunnel });
  if (!proxy) {
    return (target.protocol === 'https:' ? httpsRequest : httpRequest)(target, { method: 'GET' });
  }
  return httpRequest({
    host: proxy.host,
    port: proxy.port,
    method: 'GET',
    path: target.href,
    headers: { host: target.host },
  });
}

/** A CONNECT tunnel through the proxy, with TLS to the target over it. */
function connectTunnel(target: URL, proxy: Proxy): Promise<Duplex> {
  const authority = `${target.hostname}:${target.port || '443'}`;
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      host: proxy.host,
      port: proxy.port,
      method: 'CONNECT',
      path: authority,
      headers: { host: authority },
      timeout: HEAD_TIMEOUT_MS,
    });
    req.on('timeout', () =>
      req.destroy(new Error(`no tunnel to ${target.host} within ${HEAD_TIMEOUT_MS} ms`)),
    );
    req.on('error', (err) =>
      reject(new Error(`cannot fetch the source from ${target.host}: ${err.message}`)),
    );
    req.on('connect', (res: IncomingMessage, socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        reject(new Error(`the egress gate refused ${target.host} (${res.statusCode})`));
        return;
      }
      resolve(tlsConnect({ socket, servername: target.hostname }));
    });
    req.end();
  });
}
