/**
 * When each app last served a request, kept across restarts so that the apps a restart must start
 * again come back in order of recent traffic. A request only writes memory; the changes reach the
 * store together, at most once per `flushMs` and at shutdown, so that heavy traffic costs no
 * writes (a crash forgets at most the last interval's, which only shuffles the order a little).
 */
import type { Store } from '../persistence/store.js';
import type { Log } from '../logging.js';
import { errorMessage } from './types.js';

/** The store meta key: a JSON object of app id to last request time (ms since the epoch). */
export const LAST_USE_KEY = 'app_last_use';

export class RecentUse {
  private readonly lastUse = new Map<string, number>();
  private dirty = false;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly store: Store,
    private readonly log: Log,
    flushMs: number,
  ) {
    this.load();
    if (flushMs > 0) {
      this.timer = setInterval(() => this.flush(), flushMs);
      this.timer.unref?.();
    }
  }

  /** The app's last request time; 0 when it never had one (as far as we know). */
  of(appId: string): number {
    return this.lastUse.get(appId) ?? 0;
  }

  mark(appId: string, at: number): void {
    if ((this.lastUse.get(appId) ?? 0) >= at) return;
    this.lastUse.set(appId, at);
    this.dirty = true;
  }

  forget(appId: string): void {
    this.dirty = this.lastUse.delete(appId) || this.dirty;
  }

  /** Writes what changed since the last write; a refused write is tried at the next one. */
  flush(): void {
    if (!this.dirty) return;
    this.dirty = false;
    try {
      this.store.setMeta(LAST_USE_KEY, JSON.stringify(Object.fromEntries(this.lastUse)));
    } catch (err) {
      this.dirty = true;
      this.log('warn', 'could not store when apps were last used', { err: errorMessage(err) });
    }
  }

  /** The last write, then no more. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.flush();
  }

  private load(): void {
    const text = this.store.getMeta(LAST_USE_KEY);
    if (text === undefined) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      this.log('warn', 'ignoring unreadable last-use times', { err: errorMessage(err) });
      return;
    }
    if (typeof parsed !== 'object' || parsed === null) return;
    for (const [appId, at] of Object.entries(parsed)) {
      if (typeof at === 'number' && Number.isFinite(at)) this.lastUse.set(appId, at);
    }
  }
}
