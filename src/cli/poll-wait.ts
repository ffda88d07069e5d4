import type { AppView } from './api-client.js';

/** Between two polls of an app, whatever the server suggests: not hammering it, not dozing. */
export const POLL_MIN_MS = 500;
export const POLL_MAX_MS = 10_000;

/**
 * How long to wait before polling the app again: its `poll_after_seconds` (long while an install
 * or build runs, short while the app starts), bounded; the least without one (older servers).
 */
export function pollWaitMs(view: Pick<AppView, 'poll_after_seconds'>): number {
  const seconds = view.poll_after_seconds;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds)) return POLL_MIN_MS;
  return Math.min(POLL_MAX_MS, Math.max(POLL_MIN_MS, seconds * 1000));
}

/**
 * The wait between two polls, cut short when the event stream says the app settled: a long
 * suggested wait does not make the outcome come late.
 */
export class PollWait {
  private wake: (() => void) | undefined;
  /** Woken while no wait was under way (a poll was on the wire): the next wait is none. */
  private woken = false;

  /** Resolves after `ms`, or at once on `now()`. */
  sleep(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }

  /** Ends the wait under way, or the next one. */
  now(): void {
    if (this.wake) this.wake();
    else this.woken = true;
  }
}
