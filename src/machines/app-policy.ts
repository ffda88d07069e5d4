/** Retry and restart budgets of the app machine; pure arithmetic so the machine stays walkable. */
export interface AppPolicy {
  claimRetryBaseMs: number;
  claimRetryMaxMs: number;
  /** Transient claim failures retried before the app is Failed. */
  maxClaimRetries: number;
  restartBaseMs: number;
  restartMaxMs: number;
  /** Crashes within `crashWindowMs` (the last one included) that fail the app instead of restarting. */
  crashLimit: number;
  crashWindowMs: number;
}

export const DEFAULT_POLICY: AppPolicy = {
  claimRetryBaseMs: 250,
  claimRetryMaxMs: 5_000,
  maxClaimRetries: 5,
  restartBaseMs: 1_000,
  restartMaxMs: 30_000,
  crashLimit: 3,
  crashWindowMs: 5 * 60_000,
};

/** Default idle time before suspend (spec §3: 30m). */
export const DEFAULT_TTL_MS = 30 * 60_000;

/** Capped exponential backoff: base, 2·base, 4·base, … never above max. `n` counts from 1. */
export function backoff(baseMs: number, maxMs: number, n: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.max(0, n - 1));
}

/** The crash times still inside the window at `at`, plus the crash at `at`. */
export function crashesWith(crashes: readonly number[], at: number, windowMs: number): number[] {
  return [...crashes.filter((t) => at - t < windowMs), at];
}
