import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Readable } from 'node:stream';

/** From the request until the response head; the body is then bounded by the unpack's caps. */
const HEAD_TIMEOUT_MS = 30_000;
/** A body that stalls this long is given up on. */
const IDLE_TIMEOUT_MS = 30_000;

/**
 * GET of a source by URL (a pre-signed object-store URL, in a Kubernetes pod): the same answer
 * shape as the source door's, so the unpack does not care where the bytes come from. The URL's
 * query carries its signature: it is never logged, and errors name only its host.
 */
export function getUrl(url: string): Promise<{ statusCode: number; body: Readable }> {
  const target = new URL(url);
  if (target.protocol !== 'https:' && target.protocol !== 'http:') {
    return Promise.reject(new Error(`source URL scheme ${target.protocol} is not http(s)`));
  }
  const request = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(target, { method: 'GET', timeout: IDLE_TIMEOUT_MS });
    const head = setTimeout(
      () => req.destroy(new Error(`no answer from ${target.host} within ${HEAD_TIMEOUT_MS} ms`)),
      HEAD_TIMEOUT_MS,
    );
    req.on('timeout', () => req.destroy(new Error(`source download from ${target.host} stalled`)));
    req.on('error', (err) => {
      clearTimeout(head);
      reject(new Error(`cannot fetch the source from ${target.host}: ${err.message}`));
    });
    req.on('response', (res: IncomingMessage) => {
      clearTimeout(head);
      resolve({ statusCode: res.statusCode ?? 0, body: res });
    });
    req.end();
  });
}
