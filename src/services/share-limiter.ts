import { AppError } from '../errors.js';

/**
 * Limits password guesses per share link, so a link's password cannot be brute-forced: at most
 * `maxFailures` wrong passwords per `windowMs`, then the link refuses every password (right ones
 * too, or the lock would leak which guess was right) for a lock that doubles each time it recurs.
 */
export interface LimiterPolicy {
  maxFailures: number;
  windowMs: number;
  /** The first lock; each further lock doubles, up to `maxLockMs`. */
  baseLockMs: number;
  maxLockMs: number;
  /** Tokens tracked at once; only existing password-protected links are ever tracked. */
  maxEntries: number;
}

export const DEFAULT_LIMITER_POLICY: LimiterPolicy = {
  maxFailures: 5,
  windowMs: 15 * 60_000,
  baseLockMs: 15 * 60_000,
  maxLockMs: 4 * 60 * 60_000,
  maxEntries: 10_000,
};

interface Entry {
  failures: number;
  /** Guesses being checked right now: they count against the budget before their verdict. */
  inFlight: number;
  windowStart: number;
  lockouts: number;
  lockedUntil: number;
}

/** One reserved guess: report its outcome exactly once. */
export interface Attempt {
  succeeded(): void;
  failed(): void;
  /** Never judged (another limit refused the guess first): counts neither way. */
  abandon(): void;
}

export class AttemptLimiter {
  // Map order is insertion order; touching an entry re-inserts it, so the first is least recent.
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly policy: LimiterPolicy = DEFAULT_LIMITER_POLICY,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** Reserves a guess on `key`, or throws 429 `too_many_attempts` with the seconds to wait. */
  begin(key: string): Attempt {
    const now = this.now();
    const entry = this.entryFor(key, now);
    if (now < entry.lockedUntil) throw tooMany(entry.lockedUntil - now);
    if (now - entry.windowStart >= this.policy.windowMs) {
      entry.failures = 0;
      entry.windowStart = now;
    }
    // Concurrent guesses would all pass a check of settled failures alone.
    if (entry.failures + entry.inFlight >= this.policy.maxFailures) throw tooMany(1000);
    entry.inFlight += 1;
    let settled = false;
    const settle = (ok: boolean | undefined): void => {
      if (settled) return;
      settled = true;
      entry.inFlight -= 1;
      if (ok === true) entry.failures = 0;
      else if (ok === false) this.recordFailure(entry);
    };
    return {
      succeeded: () => settle(true),
      failed: () => settle(false),
      abandon: () => settle(undefined),
    };
  }

  /** Wrong guesses on `key` in its current window, those being checked included. */
  spent(key: string): number {
    const entry = this.entries.get(key);
    if (!entry) return 0;
    const fresh = this.now() - entry.windowStart < this.policy.windowMs;
    return (fresh ? entry.failures : 0) + entry.inFlight;
  }

  forget(key: string): void {
    this.entries.delete(key);
  }

  /** Forgets every key that starts with `prefix` (all the clients of one link). */
  forgetPrefix(prefix: string): void {
    for (const key of this.entries.keys()) if (key.startsWith(prefix)) this.entries.delete(key);
  }

  private recordFailure(entry: Entry): void {
    const now = this.now();
    entry.failures += 1;
    if (entry.failures < this.policy.maxFailures) return;
    entry.lockouts += 1;
    const lock = Math.min(
      this.policy.baseLockMs * 2 ** (entry.lockouts - 1),
      this.policy.maxLockMs,
    );
    entry.lockedUntil = now + lock;
    entry.failures = 0;
    entry.windowStart = now;
  }

  private entryFor(key: string, now: number): Entry {
    const existing = this.entries.get(key);
    if (existing && !this.forgettable(existing, now)) {
      this.entries.delete(key);
      this.entries.set(key, existing);
      return existing;
    }
    if (existing) this.entries.delete(key);
    this.makeRoom(now);
    const entry: Entry = {
      failures: 0,
      inFlight: 0,
      windowStart: now,
      lockouts: 0,
      lockedUntil: 0,
    };
    this.entries.set(key, entry);
    return entry;
  }

  /** Quiet for a whole window after its last window or lock: nothing about it matters any more. */
  private forgettable(entry: Entry, now: number): boolean {
    const lastActive = Math.max(entry.windowStart + this.policy.windowMs, entry.lockedUntil);
    return entry.inFlight === 0 && now >= lastActive + this.policy.windowMs;
  }

  private makeRoom(now: number): void {
    if (this.entries.size < this.policy.maxEntries) return;
    for (const [key, entry] of this.entries) {
      if (this.forgettable(entry, now)) this.entries.delete(key);
    }
    // Still full: drop the least recently used settled entries. Filling the map takes that many
    // password-protected links, which only authenticated owners can create.
    for (const [key, entry] of this.entries) {
      if (this.entries.size < this.policy.maxEntries) break;
      if (entry.inFlight === 0) this.entries.delete(key);
    }
  }
}

/** The refusal of a guess that must wait, saying how long. */
export function tooMany(waitMs: number): AppError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new AppError(
    429,
    'too_many_attempts',
    `too many wrong passwords for this link; retry in ${seconds} s`,
    { retryAfterSeconds: seconds },
  );
}
