import { tooMany } from './share-limiter.js';

export interface PacePolicy {
  /** Wrong passwords on one link, from anyone, in `windowMs` that make it "under attack". */
  hotAfter: number;
  windowMs: number;
  /** While under attack: the least time between two guesses checked on the link. */
  paceMs: number;
  /** A guess that would wait longer than this for its turn is refused instead. */
  maxWaitMs: number;
  /** Links tracked at once; only existing password-protected links are ever tracked. */
  maxEntries: number;
}

export const DEFAULT_PACE_POLICY: PacePolicy = {
  hotAfter: 20,
  windowMs: 15 * 60_000,
  paceMs: 1_000,
  maxWaitMs: 10_000,
  maxEntries: 10_000,
};

interface Entry {
  failures: number;
  windowStart: number;
  /** When the next guess may be checked, while under attack. */
  nextSlot: number;
}

/**
 * The per-link defence against a guesser spread over many addresses. Locking the link would lock
 * out its real visitors too (anyone can lock it with a few addresses); instead, a link with many
 * wrong passwords in a window is "under attack" and its guesses are checked one at a time, `paceMs`
 * apart, whoever sends them. The right password from a new visitor waits its turn, not the lock.
 */
export class LinkPace {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly policy: PacePolicy = DEFAULT_PACE_POLICY,
    private readonly now: () => number = Date.now,
    private readonly sleep: (ms: number) => Promise<void> = (ms) =>
      new Promise((resolve) => setTimeout(resolve, ms)),
  ) {}

  /** Whether the link is under attack now. */
  hot(token: string): boolean {
    const entry = this.current(token);
    return entry !== undefined && entry.failures >= this.policy.hotAfter;
  }

  /** The ms until the link's window ends: how long it stays under attack at least. */
  hotForMs(token: string): number {
    const entry = this.current(token);
    return entry === undefined ? 0 : entry.windowStart + this.policy.windowMs - this.now();
  }

  /** Resolves when a guess on the link may be checked; throws 429 when the wait is too long. */
  async turn(token: string): Promise<void> {
    if (!this.hot(token)) return;
    const entry = this.current(token) as Entry;
    const now = this.now();
    const slot = Math.max(now, entry.nextSlot);
    if (slot - now > this.policy.maxWaitMs) throw tooMany(slot - now);
    entry.nextSlot = slot + this.policy.paceMs;
    if (slot > now) await this.sleep(slot - now);
  }

  failed(token: string): void {
    const now = this.now();
    let entry = this.current(token);
    if (!entry) {
      this.makeRoom();
      entry = { failures: 0, windowStart: now, nextSlot: 0 };
      this.entries.set(token, entry);
    }
    entry.failures += 1;
  }

  forget(token: string): void {
    this.entries.delete(token);
  }

  private current(token: string): Entry | undefined {
    const entry = this.entries.get(token);
    if (entry && this.now() - entry.windowStart >= this.policy.windowMs) {
      this.entries.delete(token);
      return undefined;
    }
    return entry;
  }

  private makeRoom(): void {
    if (this.entries.size < this.policy.maxEntries) return;
    const now = this.now();
    for (const [token, entry] of this.entries) {
      if (now - entry.windowStart >= this.policy.windowMs) this.entries.delete(token);
    }
    // Still full: the oldest windows go. Filling it takes that many password-protected links.
    for (const token of this.entries.keys()) {
      if (this.entries.size < this.policy.maxEntries) break;
      this.entries.delete(token);
    }
  }
}
