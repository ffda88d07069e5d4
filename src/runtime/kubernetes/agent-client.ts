import { request, type IncomingMessage } from 'node:http';

export interface AgentAddress {
  host: string;
  port: number;
}

const MAX_ANSWER = 1024 * 1024;

/**
 * One JSON call to a pod agent's control port. `timeoutMs` bounds the whole call; an answer over
 * a megabyte is cut off (the pod is not trusted to keep its answers small).
 */
export function callAgent(
  at: AgentAddress,
  token: string,
  method: 'GET' | 'POST',
  path: string,
  body: unknown,
  timeoutMs: number,
): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request({
      host: at.host,
      port: at.port,
      method,
      path,
      headers: {
        authorization: `Bearer ${token}`,
        ...(payload
          ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
          : {}),
      },
    });
    const timer = setTimeout(
      () =>
        req.destroy(new Error(`agent at ${at.host} did not answer ${path} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_ANSWER)
          req.destroy(new Error(`agent answer to ${path} is over ${MAX_ANSWER} bytes`));
        else chunks.push(chunk);
      });
      res.on('end', () => {
        clearTimeout(timer);
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = text;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          // Not JSON: the caller sees the raw text in its error.
        }
        resolve({ status: res.statusCode ?? 0, body: parsed });
      });
      res.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
    req.end(payload);
  });
}

/**
 * Opens the agent's NDJSON event stream and hands over each parsed event; a line over 64 KB or a
 * stream that ends is the end. Resolves once the stream is open.
 */
export function openEvents(
  at: AgentAddress,
  token: string,
  onEvent: (event: unknown) => void,
  onEnd: (err?: Error) => void,
): Promise<{ close(): void }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: at.host,
      port: at.port,
      method: 'GET',
      path: '/events',
      headers: { authorization: `Bearer ${token}` },
    });
    req.on('error', reject);
    req.on('response', (res: IncomingMessage) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`agent event stream answered ${res.statusCode}`));
        return;
      }
      req.off('error', reject);
      let ended = false;
      const end = (err?: Error) => {
        if (ended) return;
        ended = true;
        onEnd(err);
      };
      req.on('error', (err) => end(err));
      let pending = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        pending += chunk;
        let nl: number;
        while ((nl = pending.indexOf('\n')) !== -1) {
          const line = pending.slice(0, nl);
          pending = pending.slice(nl + 1);
          if (line.trim() === '') continue;
          try {
            onEvent(JSON.parse(line));
          } catch (err) {
            req.destroy(err instanceof Error ? err : new Error(String(err)));
            return;
          }
        }
        if (pending.length > 65_536) req.destroy(new Error('agent event line over 64 KB'));
      });
      res.on('end', () => end());
      res.on('close', () => end());
      resolve({ close: () => req.destroy() });
    });
    req.end();
  });
}
