import http from 'node:http';

export interface AgentReply {
  status: number;
  body: unknown;
}

/**
 * One JSON request to a sandbox's agent over its `agent.sock`. No connection reuse: the inject is
 * a single call per sandbox, and a fresh connection cannot be left in a bad state by the last one.
 */
export function callAgent(
  socketPath: string,
  token: string,
  method: 'GET' | 'POST',
  path: string,
  opts: { body?: unknown; timeoutMs: number; signal?: AbortSignal },
): Promise<AgentReply> {
  const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  return new Promise((resolve, reject) => {
    const req = http.request({
      socketPath,
      method,
      path,
      agent: false,
      timeout: opts.timeoutMs,
      signal: opts.signal,
      headers: {
        authorization: `Bearer ${token}`,
        ...(payload === undefined
          ? {}
          : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
      },
    });
    req.on('timeout', () =>
      req.destroy(new Error(`agent did not answer ${method} ${path} within ${opts.timeoutMs} ms`)),
    );
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        try {
          resolve({
            status: res.statusCode ?? 0,
            body: text === '' ? undefined : JSON.parse(text),
          });
        } catch (err) {
          reject(new Error(`agent answered ${res.statusCode} with non-JSON: ${String(err)}`));
        }
      });
    });
    req.end(payload);
  });
}
