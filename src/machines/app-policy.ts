import { spread } from '../backoff.js';

/** Retry and restart budgets of the app machine; pure arithmetic so the machine stays walkable. */
export interface AppPolicy {
  claimRetryBaseMs: number;
  claimRetryMaxMs: number;
  /**
   * Transient claim failures retried before a new release fails. Bringing back the live release
   * (a restart, a wake) retries for as long as it takes: those failures are the platform's.
   */
  maxClaimRetries: number;
  restartBaseMs: number;
  restartMaxMs: number;
  /** Crashes within `crashWindowMs` (the last one included) that fail the app instead of restarting. */
  crashLimit: number;
  crashWindowMs: number;
  /**
   * After a switch, how long the release that served before stays running, unrouted, so that a
   * new release crashing meanwhile hands traffic straight back to it; 0: retired at the switch.
   */
  stabilityWindowMs: number;
  /** How often the new release's health is checked during the window (the supervisor probes). */
  healthProbeMs: number;
}

export const DEFAULT_POLICY: AppPolicy = {
  claimRetryBaseMs: 250,
  claimRetryMaxMs: 5_000,
  maxClaimRetries: 5,
  restartBaseMs: 1_000,
  restartMaxMs: 30_000,
  crashLimit: 3,
  crashWindowMs: 5 * 60_000,
  stabilityWindowMs: 10_000,
  healthProbeMs: 1_000,
};

/** Default idle time before suspend (spec §3: 30m). */
export const DEFAULT_TTL_MS = 30 * 60_000;

/**
 * Capped exponential backoff: base, 2·base, 4·base, … never above max. `n` counts from 1. With
 * `jitter` (0 ≤ jitter < 1, drawn by the caller: the machine stays pure) the wait is spread over
 * its upper half, so that apps failing together do not all come back at the same instant.
 */
export function backoff(baseMs: number, maxMs: number, n: number, jitter?: number): number {
  const capped = Math.min(maxMs, baseMs * 2 ** Math.max(0, n - 1));
  return jitter === undefined ? capped : spread(capped, jitter);
}

/** The crash times still inside the window at `at`, plus the crash at `at`. */
export function crashesWith(crashes: readonly number[], at: number, windowMs: number): number[] {
  return [...crashes.filter((t) => at - t < windowMs), at];
}
