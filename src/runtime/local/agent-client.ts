import http from 'node:http';

export interface AgentReply {
  status: number;
  body: unknown;
}

/**
 * The most an agent's answer may hold. Its own answers are a few KB, but a node app runs in the
 * agent's process and can rewrite them: a stream without end must not fill the control plane.
 */
const MAX_ANSWER = 1024 * 1024;

/**
 * One JSON request to a sandbox's agent over its `agent.sock`. No connection reuse: the inject is
 * a single call per sandbox, and a fresh connection cannot be left in a bad state by the last one.
 * `timeoutMs` bounds the whole call, answer included: one that trickles is cut off as one that
 * never came.
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
      signal: opts.signal,
      headers: {
        authorization: `Bearer ${token}`,
        ...(payload === undefined
          ? {}
          : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
      },
    });
    const timer = setTimeout(
      () =>
        req.destroy(
          new Error(`agent did not answer ${method} ${path} within ${opts.timeoutMs} ms`),
        ),
      opts.timeoutMs,
    );
    const fail = (err: Error): void => {
      clearTimeout(timer);
      reject(err);
    };
    req.on('error', fail);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= MAX_ANSWER) chunks.push(chunk);
        else
          res.destroy(new Error(`agent answer to ${method} ${path} is over ${MAX_ANSWER} bytes`));
      });
      res.on('error', fail);
      res.on('end', () => {
        clearTimeout(timer);
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
