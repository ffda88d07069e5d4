/**
 * One server-sent-events response (the log stream and /api/events), written straight to the raw
 * response after `reply.hijack()`. Bounded: a client that falls more than `maxBufferedBytes` behind
 * is disconnected rather than buffered for without end, so a slow client can cost others nothing
 * and memory stays flat. Whatever ends it (the client going away, `end`, `fail`, a drop, a socket
 * error) runs `onClose` exactly once, so every caller frees its subscriptions in one place.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorBody } from '../errors.js';

export interface SseOptions {
  /** Interval of `: ping` comments that keep proxies from timing the stream out; 0: none. */
  heartbeatMs: number;
  maxBufferedBytes: number;
  onClose: (why: SseClose) => void;
}

/** `client`: it went away (not an error). `dropped`: too slow. `ended`: we finished it. */
export type SseClose = 'client' | 'dropped' | 'ended';

/** 15 s: well inside the 30-60 s idle timeouts of common proxies and load balancers. */
export const HEARTBEAT_MS = 15_000;
/** Far more than a healthy client ever lags by, far less than a leak worth noticing. */
export const MAX_BUFFERED_BYTES = 256 * 1024;

export class SseStream {
  private done = false;
  private readonly heartbeat: ReturnType<typeof setInterval> | undefined;

  constructor(
    req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly opts: SseOptions,
  ) {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      // nginx buffers responses by default, which would hold back every event.
      'x-accel-buffering': 'no',
    });
    res.flushHeaders();
    const gone = (): void => this.close('client');
    // The response's close, not the request's: a request is done (and `destroyed`) once its body
    // is read, while the response closes exactly when the connection does or we end it.
    res.on('close', gone);
    // A write to a reset socket: the client is gone, which the close that follows also says.
    res.on('error', gone);
    // Gone before we got here: its close event has fired already and will not come again.
    if (res.destroyed || req.socket.destroyed) queueMicrotask(gone);
    if (opts.heartbeatMs > 0) {
      this.heartbeat = setInterval(() => this.comment('ping'), opts.heartbeatMs);
      this.heartbeat.unref?.();
    }
  }

  get closed(): boolean {
    return this.done;
  }

  /** One event; false once the stream is closed (or was dropped by this very write). */
  send(data: string, event?: string, id?: string): boolean {
    return this.write(frame(data, event, id));
  }

  comment(text: string): boolean {
    return this.write(`: ${text.replace(/[\r\n]+/g, ' ')}\n\n`);
  }

  /** Ends the stream with a terminal `event: error` frame: it could not go on. */
  fail(body: ErrorBody): void {
    this.send(JSON.stringify(body), 'error');
    this.end();
  }

  end(): void {
    if (this.done) return;
    this.res.end();
    this.close('ended');
  }

  private write(chunk: string): boolean {
    if (this.done) return false;
    if (this.res.writableLength + Buffer.byteLength(chunk) > this.opts.maxBufferedBytes) {
      this.res.destroy();
      this.close('dropped');
      return false;
    }
    this.res.write(chunk);
    return true;
  }

  private close(why: SseClose): void {
    if (this.done) return;
    this.done = true;
    if (this.heartbeat !== undefined) clearInterval(this.heartbeat);
    this.opts.onClose(why);
  }
}

/** An SSE frame; every line of `data` gets its own `data:` field, so no newline can cut it short. */
export function frame(data: string, event?: string, id?: string): string {
  const lines = data.split(/\r\n|\r|\n/).map((line) => `data: ${line}\n`);
  const head = `${event ? `event: ${event}\n` : ''}${id ? `id: ${id.replace(/[\r\n]+/g, ' ')}\n` : ''}`;
  return `${head}${lines.join('')}\n`;
}
