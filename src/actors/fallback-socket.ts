import { Duplex } from 'node:stream';

/** What the HTTP client's agent calls on its sockets, when the stream underneath has it. */
type Upstream = Duplex & {
  setTimeout?: (ms: number) => unknown;
  setKeepAlive?: (enable?: boolean, delay?: number) => unknown;
  ref?: () => unknown;
  unref?: () => unknown;
};

/** Request bytes kept for a resend; a request larger than this is never sent twice. */
const MAX_HELD_BYTES = 64 * 1024;

/**
 * Only a request that is safe to send twice (RFC 9110 §9.2.1) and whose whole head, and nothing
 * else, was written: the new release may have seen it before it died, so it must change nothing.
 */
function safeToResend(bytes: Buffer): boolean {
  const text = bytes.toString('latin1');
  return /^(GET|HEAD|OPTIONS) /.test(text) && text.indexOf('\r\n\r\n') === text.length - 4;
}

/**
 * A connection to a new release's sandbox during its stability window. When that connection ends
 * before the request written on it got a single byte of answer (the app died under it), the
 * request goes to the previous release's sandbox instead, once, and the answer comes from there:
 * the visitor never sees the crash. Requests that may change something are not resent; their
 * connection fails as it would without this.
 *
 * HTTP/1.1 as the router's agent speaks it (no pipelining): bytes written after an answer began
 * are the next request. The connection stays with the fallback from then on.
 */
export class FallbackSocket extends Duplex {
  /** Read by the agent to decide whether to set it again. */
  timeout: number | undefined;
  private current: Upstream;
  private fellBack = false;
  /** The bytes of the request in flight while it can still be resent; null: it cannot. */
  private held: Buffer[] | null = null;
  private heldBytes = 0;
  /** An answer began since the last request: the next write starts a new request. */
  private answered = true;
  /** The current connection ended cleanly, after its answer: ours ends with it. */
  private ended = false;
  private failure: Error | undefined;
  private pendingWrite: (() => void) | undefined;
  private keepAlive: [boolean | undefined, number | undefined] | undefined;
  private refed = true;

  constructor(
    primary: Duplex,
    private readonly fallback: () => Duplex,
  ) {
    super({ allowHalfOpen: false });
    this.current = this.attach(primary);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    if (this.answered) {
      this.answered = false;
      this.held = [];
      this.heldBytes = 0;
    }
    if (this.held) {
      this.heldBytes += chunk.length;
      if (this.heldBytes > MAX_HELD_BYTES) this.held = null;
      else this.held.push(chunk);
    }
    if (this.current.write(chunk)) done();
    else this.pendingWrite = done;
  }

  override _read(): void {
    this.current.resume();
  }

  override _final(done: () => void): void {
    if (!this.current.destroyed) this.current.end();
    done();
  }

  override _destroy(err: Error | null, done: (err: Error | null) => void): void {
    this.current.destroy();
    done(err);
  }

  /** As net.Socket's: 0 turns it off and takes the callback back off (the HTTP client relies on it). */
  setTimeout(ms: number, onTimeout?: () => void): this {
    this.timeout = ms;
    this.current.setTimeout?.(ms);
    if (onTimeout && ms === 0) this.removeListener('timeout', onTimeout);
    else if (onTimeout) this.once('timeout', onTimeout);
    return this;
  }

  setKeepAlive(enable?: boolean, delay?: number): this {
    this.keepAlive = [enable, delay];
    this.current.setKeepAlive?.(enable, delay);
    return this;
  }

  ref(): this {
    this.refed = true;
    this.current.ref?.();
    return this;
  }

  unref(): this {
    this.refed = false;
    this.current.unref?.();
    return this;
  }

  private attach(upstream: Upstream): Upstream {
    const mine = (): boolean => upstream === this.current;
    upstream.on('data', (chunk: Buffer) => {
      if (!mine()) return;
      this.answered = true;
      this.held = null;
      if (!this.push(chunk)) upstream.pause();
    });
    upstream.on('end', () => {
      if (!mine() || this.canResend()) return;
      this.ended = true;
      this.push(null);
    });
    upstream.on('error', (err: Error) => {
      if (mine()) this.failure = err;
    });
    upstream.on('drain', () => mine() && this.releaseWrite());
    upstream.on('timeout', () => mine() && this.emit('timeout'));
    upstream.on('close', () => mine() && this.lost());
    return upstream;
  }

  private canResend(): boolean {
    return (
      !this.fellBack &&
      !this.answered &&
      this.held !== null &&
      safeToResend(Buffer.concat(this.held))
    );
  }

  /** The current connection is gone: resend to the fallback, end cleanly, or fail. */
  private lost(): void {
    if (this.destroyed) return; // our own end (the visitor left): nothing to answer any more
    if (this.canResend()) return this.resend(Buffer.concat(this.held ?? []));
    if (!this.ended) this.destroy(this.failure ?? new Error('the app closed the connection'));
  }

  private resend(request: Buffer): void {
    this.fellBack = true;
    let next: Upstream;
    try {
      next = this.fallback();
    } catch (err) {
      this.destroy(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    this.current = this.attach(next);
    if (this.timeout !== undefined) next.setTimeout?.(this.timeout);
    if (this.keepAlive) next.setKeepAlive?.(...this.keepAlive);
    if (!this.refed) next.unref?.();
    next.write(request);
    this.releaseWrite();
  }

  private releaseWrite(): void {
    const done = this.pendingWrite;
    this.pendingWrite = undefined;
    done?.();
  }
}
