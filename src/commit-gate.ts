/**
 * Changes whose client must hear how they went (a deploy, a rollback, a config release): the
 * server may commit one only while its answer can still reach the client. A request is served
 * inside `serving`; a change it commits through `commit` is owed an answer until its response
 * closes. When the drain is about to cut what still runs (drain.ts), `close` turns away the
 * changes not yet committed (503, nothing lands) and `answered` waits for the owed answers, which
 * are on their way with nothing left to wait for: how long that takes depends on how busy the
 * host is, so no fixed time would hold.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { AppError } from './errors.js';

/** A restart of this process takes a few seconds; a client retrying sooner only finds no one. */
export const SHUTDOWN_RETRY_AFTER_SECONDS = 5;

/** A change refused because the server drains: the drain's own 503 body, with Retry-After. */
export class ShuttingDown extends AppError {
  readonly retryAfterSeconds = SHUTDOWN_RETRY_AFTER_SECONDS;

  constructor() {
    super(503, 'not_ready', 'the server is shutting down');
  }
}

/** What a request answers on: an http ServerResponse. */
export interface Answer {
  readonly closed: boolean;
  once(event: 'close', listener: () => void): unknown;
}

export class CommitGate {
  private readonly request = new AsyncLocalStorage<Answer>();
  private readonly owed = new Set<Answer>();
  private open = true;
  private settled: (() => void) | undefined;

  /** Runs `handle` (a request's handler) as the request that `answer` answers. */
  serving<T>(answer: Answer, handle: () => T): T {
    return this.request.run(answer, handle);
  }

  /**
   * Commits `write` for the request being served, which then owes its client the answer. Once
   * closed, a request's change is refused before it is written; a change outside any request
   * (the system's own) has no client to tell and is written.
   */
  commit<T>(write: () => T): T {
    const answer = this.request.getStore();
    if (answer === undefined) return write();
    if (!this.open) {
      throw new ShuttingDown();
    }
    const result = write();
    if (!answer.closed && !this.owed.has(answer)) {
      this.owed.add(answer);
      answer.once('close', () => {
        this.owed.delete(answer);
        if (this.owed.size === 0) this.settled?.();
      });
    }
    return result;
  }

  /** No request commits a change from now on. */
  close(): void {
    this.open = false;
  }

  /** Resolves once every committed change has been answered (its response closed). */
  answered(): Promise<void> {
    if (this.owed.size === 0) return Promise.resolve();
    return new Promise((resolve) => (this.settled = resolve));
  }
}
