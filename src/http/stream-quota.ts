import { AppError } from '../errors.js';

/** design.md §6: `limits.maxConcurrentLogStreamsPerUser` <= 0 means this, never unlimited. */
export const DEFAULT_MAX_STREAMS = 10;
/** `limits.maxStreams` <= 0 means this: every open stream holds a socket and a file descriptor. */
export const DEFAULT_MAX_TOTAL_STREAMS = 1000;
/** Streams end when their clients go, which we cannot predict; a few seconds is a fair retry. */
export const RETRY_AFTER_SECONDS = 5;

/** Open streaming connections of every kind and user: past the cap, 429 `too_many_streams`. */
export class StreamCap {
  private open = 0;
  readonly max: number;

  constructor(configured: number) {
    this.max = configured > 0 ? configured : DEFAULT_MAX_TOTAL_STREAMS;
  }

  acquire(): () => void {
    if (this.open >= this.max) {
      throw tooMany('too_many_streams', `the server has ${this.max} streams open; retry later`, {
        limit: this.max,
      });
    }
    this.open += 1;
    return once(() => {
      this.open -= 1;
    });
  }

  get count(): number {
    return this.open;
  }
}

export interface StreamQuotaOptions {
  /** The 429's code: log streams keep the spec's `too_many_log_streams`. */
  code?: string;
  /** What the streams are, for the message. */
  what?: string;
  /** The server-wide cap this quota's streams also count against. */
  cap?: StreamCap;
}

/** Open streams of one kind per user: the next one past the cap is 429 (`too_many_log_streams`). */
export class StreamQuota {
  private readonly open = new Map<string, number>();
  readonly max: number;

  constructor(
    configured: number,
    private readonly opts: StreamQuotaOptions = {},
  ) {
    this.max = configured > 0 ? configured : DEFAULT_MAX_STREAMS;
  }

  /** Takes a slot or throws; the returned release frees it (once, however often it is called). */
  acquire(userId: string): () => void {
    const count = this.open.get(userId) ?? 0;
    if (count >= this.max) {
      const what = this.opts.what ?? 'log streams';
      throw tooMany(
        this.opts.code ?? 'too_many_log_streams',
        `at most ${this.max} concurrent ${what} per user; close one and retry`,
        { limit: this.max },
      );
    }
    const releaseGlobal = this.opts.cap?.acquire() ?? (() => undefined);
    this.open.set(userId, count + 1);
    return once(() => {
      releaseGlobal();
      const left = (this.open.get(userId) ?? 1) - 1;
      if (left > 0) this.open.set(userId, left);
      else this.open.delete(userId);
    });
  }

  count(userId: string): number {
    return this.open.get(userId) ?? 0;
  }
}

function tooMany(code: string, message: string, details: Record<string, unknown>): AppError {
  return new AppError(429, code, message, { ...details, retryAfterSeconds: RETRY_AFTER_SECONDS });
}

function once(release: () => void): () => void {
  let released = false;
  return () => {
    if (released) return;
    released = true;
    release();
  };
}
