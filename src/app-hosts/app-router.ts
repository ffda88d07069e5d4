import {
  Agent,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { Duplex } from 'node:stream';
import type { AppRegistry } from '../actors/registry.js';
import type { Sandbox } from '../runtime/runtime.js';
import type { AppAccess } from './app-access.js';
import type { AppTraffic } from './app-traffic.js';
import { answerAdmission, refuseUpgrade } from './app-signin.js';
import type { PublicUrls } from '../services/public-urls.js';
import type { Log } from '../logging.js';
import { REPLICA_HEADERS } from '../cluster/forward-proof.js';

/**
 * Routes `Host: <name>.<apps domain>` requests to the app's sandbox, before fastify sees them:
 * streaming both ways, websockets included, once the app's access lets them through. A Suspended app is woken and the request held until it
 * is Ready; every request pushes the app's idle deadline.
 */
export class AppRouter {
  private readonly tunnels = new Set<Duplex>();

  constructor(
    private readonly registry: AppRegistry,
    private readonly urls: PublicUrls,
    /** Who may reach each app: checked before anything wakes or reaches it. */
    private readonly access: AppAccess,
    private readonly log: Log,
    /** Counts and logs what visitors asked of each app. */
    private readonly traffic?: AppTraffic,
    private readonly wakeWaitMs = 30_000,
  ) {}

  /** Closes every upgraded connection (the HTTP server no longer tracks them): for shutdown. */
  closeTunnels(): void {
    for (const socket of this.tunnels) socket.destroy();
    this.tunnels.clear();
  }

  /** The app a request addresses, or undefined when it is for the control plane. */
  appFor(req: IncomingMessage): string | undefined {
    return this.urls.appForHost(req.headers.host);
  }

  async handle(name: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    res.once('finish', () =>
      this.traffic?.answered(name, req, res.statusCode, performance.now() - started),
    );
    const admission = await this.access.admit(name, req);
    if (admission.kind !== 'pass') return answerAdmission(res, req, name, admission);
    const sandbox = await this.registry.route(name, { waitMs: this.wakeWaitMs });
    if (!sandbox) return this.notServing(name, res);
    this.forward(name, sandbox, req, res, retryable(req));
  }

  /**
   * Streams the request to the sandbox and its answer back. A GET or HEAD the app did not answer
   * at all (it died, its sandbox is being replaced) is sent once more to where it serves next.
   */
  private forward(
    name: string,
    sandbox: Sandbox,
    req: IncomingMessage,
    res: ServerResponse,
    retry: boolean,
  ): void {
    this.registry.touch(name);
    let answered = false;
    const upstream = httpRequest(
      {
        agent: agentFor(sandbox),
        method: req.method,
        path: req.url,
        headers: forwardedHeaders(req),
      },
      (answer) => {
        answered = true;
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.rawHeaders));
        answer.pipe(res);
        answer.on('error', () => res.destroy());
      },
    );
    upstream.on('error', () => {
      if (!answered && retry && !res.destroyed) {
        res.off('close', cut);
        void this.retry(name, sandbox, req, res);
      } else if (!res.headersSent) page(res, 502, `The app “${name}” did not answer.`);
      else res.destroy();
    });
    const cut = (): void => void upstream.destroy();
    res.on('close', cut);
    if (req.readableEnded || retry) {
      // Nothing to stream: a retryable request has no body.
      req.resume();
      upstream.end();
    } else req.pipe(upstream);
  }

  /**
   * The app did not answer on `failed`. A sandbox that died is replaced within moments: wait a
   * little for another, then take whatever serves (a connection dropped by a live app, too).
   */
  private async retry(
    name: string,
    failed: Sandbox,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    try {
      const next =
        (await this.registry.route(name, { waitMs: REPLACE_WAIT_MS, instead: failed })) ??
        (await this.registry.route(name, { waitMs: this.wakeWaitMs }));
      if (res.destroyed) return;
      if (!next) return this.notServing(name, res);
      this.forward(name, next, req, res, false);
    } catch (err) {
      this.fail(res, err);
    }
  }

  /**
   * No sandbox to send the request to. An app that exists is never a 404: one on its way back
   * (restart, wake, deploy) is a 503 to retry shortly; a failed one is a 503 that says so.
   */
  private notServing(name: string, res: ServerResponse): void {
    const phase = this.registry.phase(name);
    if (phase === undefined) return page(res, 404, `No app named “${name}” is live here.`);
    if (phase === 'Failed') {
      return page(
        res,
        503,
        `The app “${name}” failed to start; its owner can see why and redeploy.`,
      );
    }
    const wait = { 'retry-after': String(RETRY_AFTER_S) };
    page(res, 503, `The app “${name}” is starting; try again in a moment.`, wait);
  }

  /** Answers a request whose routing failed, without leaking the error to the app's visitor. */
  fail(res: ServerResponse, err: unknown): void {
    this.log('error', 'app routing failed', { err });
    if (!res.headersSent) page(res, 502, 'The app could not be reached.');
    else res.destroy();
  }

  /** Websocket (or any) upgrade: the request head is replayed to the app, then bytes flow both ways. */
  async upgrade(name: string, req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    if ((await this.access.admit(name, req)).kind !== 'pass') {
      socket.end(refuseUpgrade(name));
      return;
    }
    const sandbox = await this.registry.route(name, { waitMs: this.wakeWaitMs });
    if (!sandbox) {
      const status =
        this.registry.phase(name) === undefined
          ? '404 Not Found'
          : `503 Service Unavailable\r\nRetry-After: ${RETRY_AFTER_S}`;
      socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    this.registry.touch(name);
    const app = sandbox.connect();
    this.tunnels.add(socket);
    app.on('error', () => socket.destroy());
    // Either side finishing ends the tunnel: half-open websockets would outlive both peers' interest.
    socket.on('end', () => {
      app.destroy();
      socket.destroy();
    });
    app.on('end', () => {
      socket.end();
      app.destroy();
    });
    socket.on('close', () => {
      this.tunnels.delete(socket);
      app.destroy();
    });
    app.on('close', () => socket.end());
    const headers = forwardedHeaders(req, true);
    const lines = [`${req.method} ${req.url} HTTP/1.1`];
    for (const [key, value] of Object.entries(headers)) {
      for (const v of Array.isArray(value) ? value : [value]) lines.push(`${key}: ${v}`);
    }
    app.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (head.length) app.write(head);
    app.pipe(socket);
    socket.pipe(app);
  }
}

/**
 * One keep-alive agent per sandbox: connections to the app socket are reused across requests, as
 * a browser reuses its own; the agent goes away with the sandbox.
 */
const agents = new WeakMap<Sandbox, Agent>();
function agentFor(sandbox: Sandbox): Agent {
  let agent = agents.get(sandbox);
  if (!agent) {
    agent = new Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64, timeout: 60_000 });
    agent.createConnection = () => sandbox.connect();
    agents.set(sandbox, agent);
  }
  return agent;
}

/** Hop-by-hop headers (RFC 9110 §7.6.1) belong to one connection; the upgrade path keeps its own. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'upgrade',
]);

function forwardedHeaders(
  req: IncomingMessage,
  upgrade = false,
): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [key, value] of Object.entries(req.headers)) {
    if (value !== undefined && (upgrade || !HOP_BY_HOP.has(key))) headers[key] = value;
  }
  // Between the replicas only: a proof an app saw could be replayed to the leader.
  for (const key of REPLICA_HEADERS) delete headers[key];
  const peer = req.socket.remoteAddress ?? '';
  const prior = req.headers['x-forwarded-for'];
  headers['x-forwarded-for'] = prior ? `${String(prior)}, ${peer}` : peer;
  headers['x-forwarded-host'] = req.headers.host ?? '';
  headers['x-forwarded-proto'] = 'encrypted' in req.socket ? 'https' : 'http';
  return headers;
}

/** The app's response headers without its hop-by-hop ones: our connection to the visitor is ours. */
function endToEnd(rawHeaders: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string;
    if (!HOP_BY_HOP.has(name.toLowerCase())) out.push(name, rawHeaders[i + 1] as string);
  }
  return out;
}

/** A GET or HEAD without a body: safe to send again when the app never answered it. */
function retryable(req: IncomingMessage): boolean {
  const bodyless =
    req.headers['transfer-encoding'] === undefined &&
    (req.headers['content-length'] ?? '0') === '0';
  return (req.method === 'GET' || req.method === 'HEAD') && bodyless;
}

/** How long a retried request waits for its app's failed sandbox to be replaced. */
const REPLACE_WAIT_MS = 2_000;

/** How long a visitor of an app on its way back is asked to wait. */
const RETRY_AFTER_S = 2;

function page(
  res: ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  const body = `<!doctype html><meta charset="utf-8"><title>${status}</title><h1>${status}</h1><p>${text}</p>\n`;
  res.writeHead(status, {
    ...headers,
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}
