/**
 * A clean stop for the one listener (control plane and app hosts alike). Once `run` starts, the
 * listener accepts no new connection, a request that still arrives on an open keep-alive
 * connection is answered 503 `not_ready` with `Retry-After` and `Connection: close`, the streams
 * that never end on their own are ended at once (`onBegin`), and the requests in flight get until
 * the timeout to finish: a deploy waiting for its app to get Ready is answered, not reset, so its
 * client knows whether it was committed. What is left at the timeout is cut, but for the answers
 * still owed for changes already committed (commit-gate.ts): those are waited for.
 */
import type { Server as HttpServer, ServerResponse } from 'node:http';
import { Server as HttpsServer } from 'node:https';
import { Server as NetServer, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { SHUTDOWN_RETRY_AFTER_SECONDS } from '../commit-gate.js';
import type { ErrorBody } from '../errors.js';

/** The body of every refusal, and of the `event: error` frame that ends a stream. */
export const SHUTTING_DOWN: ErrorBody = {
  code: 'not_ready',
  message: 'the server is shutting down',
};

/** How long before the drain's timeout the requests still running hear that they will be cut. */
const CUT_NOTICE_MS = 1_000;

export interface DrainResult {
  /** Requests still running at the timeout, and cut. */
  forced: number;
  ms: number;
}

export class Drain {
  private draining = false;
  /** The drain has ended: whatever still arrives finds the server stopping. */
  private over = false;
  private server: HttpServer | HttpsServer | undefined;
  /** What accepts the server's connections, when not the server itself (the front door's). */
  private acceptor: Acceptor | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly inFlight = new Set<ServerResponse>();
  private readonly beginHooks: Array<() => void> = [];
  private readonly cutHooks: Array<() => Promise<void> | void> = [];
  private wake: (() => void) | undefined;
  private cutCalled: () => void = () => undefined;
  /** Resolves at cut(): a second signal waits for nothing more. */
  private readonly cutNow = new Promise<void>((resolve) => (this.cutCalled = resolve));
  private running: Promise<DrainResult> | undefined;

  /** Tracks the listener's connections, so that the idle ones and the stragglers can be closed. */
  watch(server: HttpServer | HttpsServer): void {
    this.server = server;
    const event = server instanceof HttpsServer ? 'secureConnection' : 'connection';
    server.on(event, (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  /**
   * The server's connections come from the front door (front-door.ts): the drain stops taking
   * them there, and the front door holds new visitors for the next control plane.
   */
  acceptFrom(acceptor: Acceptor): void {
    this.acceptor = acceptor;
  }

  /** The answer ends its connection, the visitor's too when a front door stands between. */
  private endsConnection(res: ServerResponse): void {
    res.setHeader('connection', 'close');
    if (this.closeMark) res.setHeader(this.closeMark, '1');
  }

  /**
   * The header by which an answer asks the front door to end the visitor's connection too (the
   * native one keeps it open on a bare `Connection: close`); none when no front door needs it.
   */
  get closeMark(): string | undefined {
    return this.acceptor?.closeMark;
  }

  get active(): boolean {
    return this.draining;
  }

  /** Requests being answered now (streams included until they are ended). */
  get pending(): number {
    return this.inFlight.size;
  }

  /** Runs once the drain starts: for whatever stays open until told to stop (SSE streams). */
  onBegin(hook: () => void): void {
    this.beginHooks.push(hook);
  }

  /**
   * Runs shortly before the drain cuts what still runs (CUT_NOTICE_MS ahead of the timeout, or
   * at a second signal): the last chance to answer a request whose change is already made. The
   * drain waits for the promise a hook returns (those answers), however long a busy host takes
   * to write them, unless a second signal cuts it short.
   */
  beforeCut(hook: () => Promise<void> | void): void {
    this.cutHooks.push(hook);
  }

  /**
   * Every request goes through here first: false when it was answered 503 because the server is
   * draining; otherwise it counts as in flight until its response closes. Behind a front door,
   * a request that is `servable` while draining (an app's, a GET or HEAD) is still answered, on
   * a connection that then closes: the visitor's next request goes to the next control plane.
   */
  admit(res: ServerResponse, servable = false): boolean {
    if (this.over && this.acceptor && retried(res)) {
      // Past the drain the server is stopping, its apps with it: a connection the front door had
      // opened before (its PROXY line read late, or to the hold socket) ends unanswered, and the
      // front door sends the GET again, to the next control plane.
      res.socket?.destroy();
      return false;
    }
    if (this.draining && !(servable && this.acceptor && !this.over)) {
      this.endsConnection(res);
      refuse(res);
      return false;
    }
    if (this.draining) this.endsConnection(res);
    this.inFlight.add(res);
    res.once('close', () => {
      this.inFlight.delete(res);
      if (this.inFlight.size === 0) this.wake?.();
    });
    return true;
  }

  /** The same refusal for a websocket upgrade, written on the raw socket; false when admitted. */
  refuseUpgrade(socket: Duplex): boolean {
    if (!this.draining) return false;
    const body = JSON.stringify(SHUTTING_DOWN);
    const mark = this.acceptor?.closeMark ? `${this.acceptor.closeMark}: 1\r\n` : '';
    socket.end(
      'HTTP/1.1 503 Service Unavailable\r\n' +
        'content-type: application/json; charset=utf-8\r\n' +
        `content-length: ${Buffer.byteLength(body)}\r\n` +
        `retry-after: ${SHUTDOWN_RETRY_AFTER_SECONDS}\r\n` +
        `connection: close\r\n${mark}\r\n` +
        body,
    );
    return true;
  }

  /**
   * Stops accepting, ends the streams, waits for the requests in flight (at most `timeoutMs`),
   * then closes every connection left: idle keep-alive ones, and the requests cut at the timeout.
   * Called twice, the second call gets the first one's result.
   */
  run(timeoutMs: number): Promise<DrainResult> {
    this.running ??= this.drain(timeoutMs);
    return this.running;
  }

  /** Ends the wait now (a second signal): what still runs is cut, after the cut notice. */
  cut(): void {
    this.cutCalled();
    this.wake?.();
  }

  /** Resolves once nothing is in flight, `ms` passed, or cut() was called. */
  private waitIdle(ms: number): Promise<void> {
    if (this.inFlight.size === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private async drain(timeoutMs: number): Promise<DrainResult> {
    const started = Date.now();
    this.draining = true;
    if (this.acceptor) await this.acceptor.stopAccepting();
    else if (this.server?.listening) {
      // net's close, not http's: http's also closes the idle keep-alive connections at once, and a
      // client about to reuse one would get a reset instead of the 503 that tells it what happened.
      NetServer.prototype.close.call(this.server);
    }
    for (const res of this.inFlight) {
      // Answers not yet begun say the connection ends with them.
      if (!res.headersSent) this.endsConnection(res);
    }
    for (const hook of this.beginHooks) hook();
    if (this.inFlight.size > 0) {
      const notice = Math.min(CUT_NOTICE_MS, timeoutMs / 4);
      await this.waitIdle(timeoutMs - notice);
      if (this.inFlight.size > 0) {
        const owed = Promise.all(this.cutHooks.map((hook) => hook()));
        await Promise.all([this.waitIdle(notice), Promise.race([owed, this.cutNow])]);
      }
    }
    const forced = this.inFlight.size;
    this.over = true;
    for (const socket of this.sockets) socket.destroy();
    return { forced, ms: Date.now() - started };
  }
}

/** What accepts the server's connections for it: a front door (front-door.ts). */
interface Acceptor {
  stopAccepting(): Promise<void>;
  /** The header that asks the front door to end the visitor's connection after an answer. */
  closeMark?: string;
}

/** A request a front door sends again when its connection ends without an answer. */
function retried(res: ServerResponse): boolean {
  return res.req.method === 'GET' || res.req.method === 'HEAD';
}

/** A 503; its connection ends (`endsConnection`, set by the caller). */
function refuse(res: ServerResponse): void {
  const body = JSON.stringify(SHUTTING_DOWN);
  res.writeHead(503, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'retry-after': String(SHUTDOWN_RETRY_AFTER_SECONDS),
  });
  res.end(body);
}
