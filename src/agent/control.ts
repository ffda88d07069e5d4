import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import { errorText, warn } from './diag.js';
import type { RingLine } from './log-ring.js';
import { CONTROL_MAX_BODY, type InjectRequest, type InstallRequest } from './protocol.js';

export interface ControlHandlers {
  status(): Record<string, unknown>;
  health(): Promise<boolean>;
  logs(lines: number): RingLine[];
  /** `socket` is the request's own: a node app must not be kept alive by the host's call. */
  inject(request: InjectRequest, socket: net.Socket): Promise<{ status: number; body: unknown }>;
  /** Called after the answer is written. */
  afterInject(status: number): void;
  /** The general lane's install, before the inject. */
  install(request: InstallRequest): Promise<{ status: number; body: unknown }>;
  stop(): void;
}

/**
 * The agent's control API on `agent.sock`. Every request carries `Authorization: Bearer <token>`,
 * compared in constant time: the socket is reachable from inside the sandbox too.
 */
export function createControlServer(token: string, handlers: ControlHandlers): http.Server {
  // The host keeps a connection open for its next call (agent-client.ts): never closed for being
  // idle, and never what keeps this process alive (the server is, until a node app loads).
  const server = http.createServer(controlHandler(token, handlers));
  server.keepAliveTimeout = 0;
  server.on('connection', (socket: net.Socket) => socket.unref());
  return server;
}

/** The control API as a request listener, for a server that also answers other routes. */
export function controlHandler(token: string, handlers: ControlHandlers): http.RequestListener {
  const expected = digest(token);
  return (req, res) => {
    const send = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
    };
    if (!authorized(req.headers.authorization, expected))
      return send(401, { error: 'unauthorized' });
    const url = new URL(req.url ?? '/', 'http://agent');
    const route = `${req.method} ${url.pathname}`;
    if (route === 'GET /status') return send(200, handlers.status());
    if (route === 'GET /health') {
      handlers.health().then(
        (ok) => send(ok ? 200 : 503, { ok }),
        (err: unknown) => send(500, { error: errorText(err) }),
      );
      return;
    }
    if (route === 'GET /logs') {
      const lines = Math.min(
        Math.max(Number(url.searchParams.get('lines') ?? 200) || 200, 1),
        1000,
      );
      return send(200, { lines: handlers.logs(lines) });
    }
    if (route === 'POST /stop') {
      send(202, { ok: true });
      res.on('finish', () => handlers.stop());
      return;
    }
    if (route === 'POST /warmup') {
      readJson(req).then(
        (body) => send(200, { ok: true, body }),
        (err: unknown) => send(400, { error: errorText(err) }),
      );
      return;
    }
    if (route === 'POST /install') {
      readJson(req)
        .then((body) => handlers.install(body as InstallRequest))
        .then(
          ({ status, body }) => send(status, body),
          (err: unknown) => {
            warn('install failed', { error: errorText(err) });
            send(500, { ok: false, error: errorText(err) });
          },
        );
      return;
    }
    if (route !== 'POST /inject') return send(404, { error: `no route ${route}` });
    readJson(req)
      .then((body) => handlers.inject(body as InjectRequest, req.socket))
      .then(
        ({ status, body }) => {
          res.on('finish', () => handlers.afterInject(status));
          send(status, body);
        },
        (err: unknown) => {
          warn('inject failed', { error: errorText(err) });
          send(500, { ok: false, error: errorText(err) });
        },
      );
  };
}

export function readJson(req: http.IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > CONTROL_MAX_BODY) req.destroy(new Error('request body too large'));
      else chunks.push(chunk);
    });
    req.on('error', reject);
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch (err) {
        reject(new Error(`request body is not JSON: ${errorText(err)}`));
      }
    });
  });
}

export function authorized(header: string | undefined, expected: Buffer): boolean {
  const match = /^Bearer (.+)$/.exec(header ?? '');
  // Hashing first makes both sides the same length, so the comparison time says nothing.
  return match?.[1] !== undefined && timingSafeEqual(digest(match[1]), expected);
}

export function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
