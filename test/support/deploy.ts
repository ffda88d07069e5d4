import { request } from 'node:http';

/** POSTs a deploy as multipart: `source` (gzipped tarball) and `metadata` (JSON string). */
export async function deploy(
  base: string,
  token: string | undefined,
  metadata: unknown,
  source: Buffer | undefined,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const form = new FormData();
  if (metadata !== undefined) {
    form.set('metadata', typeof metadata === 'string' ? metadata : JSON.stringify(metadata));
  }
  if (source !== undefined) {
    form.set(
      'source',
      new Blob([new Uint8Array(source)], { type: 'application/gzip' }),
      'source.tar.gz',
    );
  }
  // As the CLI does: with auth disabled, a multipart POST without it could be a web form's.
  const headers: Record<string, string> = { 'x-requested-with': 'slipway-test' };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  const res = await fetch(`${base}/v1/deploy`, { method: 'POST', body: form, headers });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/**
 * GETs an app URL (`http://<name>.localhost:<port>/path`) by connecting to loopback and sending the
 * URL's host in the Host header, as a browser resolving `*.localhost` would (`connectTo`: another
 * address, as an ingress sending the host to a pod).
 */
export function fetchApp(
  url: string,
  init: {
    method?: string;
    headers?: Record<string, string>;
    connectTo?: string;
    body?: string | Buffer;
  } = {},
): Promise<{
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: init.connectTo ?? '127.0.0.1',
        port: target.port || 80,
        path: `${target.pathname}${target.search}`,
        method: init.method ?? 'GET',
        headers: { host: target.host, ...init.headers },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

/** Polls GET /v1/apps/{id} until the phase is one of `phases` or the time runs out. */
export async function waitForPhase(
  base: string,
  token: string | undefined,
  appId: string,
  phases: string[],
  timeoutMs = 20_000,
): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  let last: Record<string, unknown> = {};
  while (Date.now() < deadline) {
    const res = await fetch(`${base}/v1/apps/${appId}`, { headers });
    last = (await res.json()) as Record<string, unknown>;
    if (phases.includes(String(last.phase))) return last;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`app ${appId} never reached ${phases.join('/')}: ${JSON.stringify(last)}`);
}
