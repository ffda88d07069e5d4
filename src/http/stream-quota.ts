import { AppError } from '../errors.js';

/** design.md §6: `limits.maxConcurrentLogStreamsPerUser` <= 0 means this, never unlimited. */
export const DEFAULT_MAX_STREAMS = 10;
/** Streams end when their clients go, which we cannot predict; a few seconds is a fair retry. */
export const RETRY_AFTER_SECONDS = 5;

/** Open log streams per user: the next one past the cap is 429 `too_many_log_streams`. */
export class StreamQuota {
  private readonly open = new Map<string, number>();
  readonly max: number;

  constructor(configured: number) {
    this.max = configured > 0 ? configured : DEFAULT_MAX_STREAMS;
  }

  /** Takes a slot or throws; the returned release frees it (once, however often it is called). */
  acquire(userId: string): () => void {
    const count = this.open.get(userId) ?? 0;
    if (count >= this.max) {
      throw new AppError(
        429,
        'too_many_log_streams',
        `at most ${this.max} concurrent log streams per user; close one and retry`,
        { limit: this.max, retryAfterSeconds: RETRY_AFTER_SECONDS },
      );
    }
    this.open.set(userId, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(userId) ?? 1) - 1;
      if (left > 0) this.open.set(userId, left);
      else this.open.delete(userId);
    };
  }

  count(userId: string): number {
    return this.open.get(userId) ?? 0;
  }
}
