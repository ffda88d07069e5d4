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
 * A sandbox's connections to its agent, one kept open between calls: a call on it wakes the agent
 * once, where a new connection wakes it to accept and again to read (a millisecond or more on a
 * busy host, on every inject and health check).
 */
export function agentLink(): http.Agent {
  return new http.Agent({ keepAlive: true, maxFreeSockets: 1 });
}

export interface CallOptions {
  body?: unknown;
  timeoutMs: number;
  signal?: AbortSignal;
  /** The sandbox's link (agentLink); without one, a connection of its own. */
  link?: http.Agent;
}

/**
 * One JSON request to a sandbox's agent over its `agent.sock`. `timeoutMs` bounds the whole call,
 * answer included: one that trickles is cut off as one that never came. A kept connection the
 * agent closed meanwhile is found out by the call itself: it is made again on a new one.
 */
export async function callAgent(
  socketPath: string,
  token: string,
  method: 'GET' | 'POST',
  path: string,
  opts: CallOptions,
): Promise<AgentReply> {
  const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  try {
    return await callOnce(socketPath, token, method, path, payload, opts);
  } catch (err) {
    if (!(err instanceof StaleConnection)) throw err;
    return callOnce(socketPath, token, method, path, payload, { ...opts, link: undefined });
  }
}

/** A kept connection broke before any answer: the request may be made again on a fresh one. */
class StaleConnection extends Error {}

function callOnce(
  socketPath: string,
  token: string,
  method: 'GET' | 'POST',
  path: string,
  payload: string | undefined,
  opts: CallOptions,
): Promise<AgentReply> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      socketPath,
      method,
      path,
      agent: opts.link ?? false,
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
    let answered = false;
    req.on('error', (err: NodeJS.ErrnoException) => {
      const broken = err.code === 'ECONNRESET' || err.code === 'EPIPE';
      if (broken && req.reusedSocket && !answered) {
        clearTimeout(timer);
        reject(new StaleConnection(err.message));
      } else fail(err);
    });
    req.on('response', (res) => {
      answered = true;
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
