import { AppError } from '../errors.js';

export interface HashQueueLimits {
  /** Hashes computing at once (each holds one libuv thread). */
  concurrency: number;
  /** Hashes one key (a user) may have queued or computing. */
  perKey: number;
  /** Hashes queued or computing across all keys. */
  total: number;
}

export const HASH_QUEUE_LIMITS: HashQueueLimits = { concurrency: 2, perKey: 8, total: 64 };

/**
 * A bounded, fair queue for password hashing. Keys take turns (least recently served first), so
 * one user's burst waits behind itself, not in front of everyone; and each key's share, like the
 * whole queue, is bounded, so a burst is refused with 429 instead of waiting minutes.
 */
export class HashQueue {
  private readonly waiting = new Map<string, (() => void)[]>();
  /**
   * When each key was last served: the least recently served key with work waiting goes next. A
   * key is remembered while it holds any hash, so it cannot jump the queue by coming back.
   */
  private readonly served = new Map<string, number>();
  private tick = 0;
  private readonly held = new Map<string, number>();
  private running = 0;
  private total = 0;

  constructor(private readonly limits: HashQueueLimits = HASH_QUEUE_LIMITS) {}

  /** Runs `task` in `key`'s turn, or throws 429 `too_many_attempts` when the queue is full. */
  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const held = this.held.get(key) ?? 0;
    if (held >= this.limits.perKey || this.total >= this.limits.total) throw busy();
    this.held.set(key, held + 1);
    this.total += 1;
    try {
      await this.turn(key);
      try {
        return await task();
      } finally {
        this.running -= 1;
        this.next();
      }
    } finally {
      this.total -= 1;
      const left = (this.held.get(key) ?? 1) - 1;
      if (left === 0) {
        this.held.delete(key);
        this.waiting.delete(key);
        this.served.delete(key);
      } else this.held.set(key, left);
    }
  }

  private turn(key: string): Promise<void> {
    return new Promise((resolve) => {
      const queue = this.waiting.get(key);
      if (queue) queue.push(resolve);
      else this.waiting.set(key, [resolve]);
      this.next();
    });
  }

  private next(): void {
    while (this.running < this.limits.concurrency) {
      let key: string | undefined;
      for (const [k, queue] of this.waiting) {
        if (queue.length === 0) continue;
        if (key === undefined || this.servedAt(k) < this.servedAt(key)) key = k;
      }
      if (key === undefined) return;
      const start = this.waiting.get(key)?.shift();
      this.served.set(key, (this.tick += 1));
      this.running += 1;
      start?.();
    }
  }

  /** Never served (in this stretch of activity) comes before any served key. */
  private servedAt(key: string): number {
    return this.served.get(key) ?? 0;
  }
}

function busy(): AppError {
  return new AppError(
    429,
    'too_many_attempts',
    'too many share-link passwords are being hashed right now; retry in 1 s',
    { retryAfterSeconds: 1 },
  );
}
