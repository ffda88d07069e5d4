import { request } from 'node:https';

export type HttpsAnswer = {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
};

export interface HttpsInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

/**
 * HTTPS to 127.0.0.1 at the URL's port with the URL's host in the Host header, trusting only
 * `ca`. The self-signed certificate names localhost, not every `<app>.localhost`: pinned, not
 * name-checked.
 */
export function httpsTo(ca: string, url: string, init: HttpsInit = {}): Promise<HttpsAnswer> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const req = request(
      {
        host: '127.0.0.1',
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: init.method ?? 'GET',
        headers: { host: target.host, ...init.headers },
        ca,
        checkServerIdentity: () => undefined,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

/** A deploy's multipart body: the metadata part, then the source tarball. */
export function deployForm(metadata: object, source: Buffer): { type: string; body: Buffer } {
  const boundary = 'slipway-https-boundary';
  const body = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="metadata"\r\n\r\n` +
        `${JSON.stringify(metadata)}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="source"; filename="s.tar.gz"\r\n` +
        'Content-Type: application/gzip\r\n\r\n',
    ),
    source,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { type: `multipart/form-data; boundary=${boundary}`, body };
}
