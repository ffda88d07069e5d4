import { randomBytes } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { unreachable, type ApiClient } from './api-client.js';

/** Bytes handed to the socket per write: small enough for a smooth bar, big enough to be cheap. */
const CHUNK = 64 * 1024;

export interface UploadAnswer {
  status: number;
  text: string;
}

/**
 * POSTs `/v1/deploy` as multipart (`metadata` JSON, `source` tarball), streaming the body so
 * `onProgress` can count the bytes sent. The form is written by hand around the tarball because
 * `fetch` with a FormData body gives no way to see its progress.
 */
export function uploadDeploy(
  api: ApiClient,
  metadata: unknown,
  tarball: Buffer,
  onProgress: (sent: number, total: number) => void,
): Promise<UploadAnswer> {
  const boundary = `slipway-${randomBytes(16).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\n` +
      // A plain field, as curl -F and FormData send it: the server's multipart parser would turn a
      // part typed application/json into an object before the metadata reader sees the text.
      'Content-Disposition: form-data; name="metadata"\r\n\r\n' +
      `${JSON.stringify(metadata)}\r\n` +
      `--${boundary}\r\n` +
      'Content-Disposition: form-data; name="source"; filename="source.tar.gz"\r\n' +
      'Content-Type: application/gzip\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const total = head.length + tarball.length + tail.length;
  const url = new URL(`${api.baseURL}/v1/deploy`);
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;

  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request(url, {
      method: 'POST',
      headers: api.headers({
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': String(total),
      }),
    });
    req.on('response', (res: IncomingMessage) => {
      answered = true;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', (err) => reject(unreachable(api.baseURL, err)));
    });
    req.on('error', (err) => {
      // A server that answers early (401) may close while the body is still going: its answer wins.
      if (!answered) reject(unreachable(api.baseURL, err));
    });
    void writeBody(req, [head, tarball, tail], total, onProgress);
  });
}

async function writeBody(
  req: ReturnType<typeof httpRequest>,
  parts: Buffer[],
  total: number,
  onProgress: (sent: number, total: number) => void,
): Promise<void> {
  let sent = 0;
  for (const part of parts) {
    for (let at = 0; at < part.length; at += CHUNK) {
      if (req.destroyed) return;
      const chunk = part.subarray(at, at + CHUNK);
      const flowing = req.write(chunk);
      sent += chunk.length;
      onProgress(sent, total);
      if (!flowing) await drained(req);
    }
  }
  req.end();
}

/** Waits until the socket takes more, or is gone (then the loop above stops). */
function drained(req: ReturnType<typeof httpRequest>): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      req.off('drain', done);
      req.off('close', done);
      resolve();
    };
    req.on('drain', done);
    req.on('close', done);
  });
}
