import type { StorageHealth } from './storage-health.js';
import { spread } from '../backoff.js';
import type { Log } from '../logging.js';

export interface WriteRetryOptions {
  log: Log;
  /** Retried at once when the stores write again. */
  health?: StorageHealth;
  minDelayMs?: number;
  maxDelayMs?: number;
}

interface Pending {
  write: () => void;
  delayMs: number;
  timer?: NodeJS.Timeout;
  failures: number;
}

/**
 * Writes that record what already happened (an app's machine state, a deploy's outcome, an audit
 * event) and so must land: tried now, and on failure again with jittered backoff (0.1 s doubling
 * to 5 s, each wait spread over its upper half) until they do, and at once when storage recovers.
 * A newer write under the same key replaces the one waiting: an app's row only needs its latest
 * state.
 */
export class WriteRetry {
  private readonly pending = new Map<string, Pending>();
  private readonly minDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly unsubscribe: () => void;

  constructor(private readonly opts: WriteRetryOptions) {
    this.minDelayMs = opts.minDelayMs ?? 100;
    this.maxDelayMs = opts.maxDelayMs ?? 5_000;
    this.unsubscribe = opts.health?.onRecovered(() => this.flush()) ?? (() => undefined);
  }

  /** Runs `write` now; if it throws, keeps it (replacing any under `key`) and retries. */
  run(key: string, write: () => void): boolean {
    const waiting = this.pending.get(key);
    if (waiting) {
      waiting.write = write;
      return false; // the retry timer runs the newest
    }
    try {
      write();
      return true;
    } catch (err) {
      this.opts.log('warn', 'write failed; retrying until it lands', { key, err: message(err) });
      this.keep(key, { write, delayMs: this.minDelayMs, failures: 1 });
      return false;
    }
  }

  /** True while a write under `key` waits for its retry. */
  waiting(key: string): boolean {
    return this.pending.has(key);
  }

  /** How many writes wait (for `/readyz` details and tests). */
  get size(): number {
    return this.pending.size;
  }

  /** Drops the waiting writes whose key `match` accepts (their subject is gone). */
  drop(match: (key: string) => boolean): void {
    for (const [key, entry] of this.pending) {
      if (!match(key)) continue;
      clearTimeout(entry.timer);
      this.pending.delete(key);
    }
  }

  /** Tries every waiting write now. */
  flush(): void {
    for (const key of [...this.pending.keys()]) this.attempt(key);
  }

  /** Shutdown: one last try each; what still fails is logged, not kept. */
  stop(): void {
    this.unsubscribe();
    this.flush();
    for (const [key, entry] of this.pending) {
      clearTimeout(entry.timer);
      this.opts.log('error', 'write lost at shutdown: storage still failing', { key });
    }
    this.pending.clear();
  }

  private attempt(key: string): void {
    const entry = this.pending.get(key);
    if (!entry) return;
    clearTimeout(entry.timer);
    try {
      entry.write();
    } catch (err) {
      entry.failures += 1;
      entry.delayMs = Math.min(entry.delayMs * 2, this.maxDelayMs);
      if (entry.failures % 10 === 0) {
        const extra = { key, failures: entry.failures, err: message(err) };
        this.opts.log('warn', 'write still failing', extra);
      }
      this.keep(key, entry);
      return;
    }
    this.pending.delete(key);
    this.opts.log('info', 'write landed after retries', { key, failures: entry.failures });
  }

  private keep(key: string, entry: Pending): void {
    entry.timer = setTimeout(() => this.attempt(key), spread(entry.delayMs, Math.random()));
    entry.timer.unref();
    this.pending.set(key, entry);
  }
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));
