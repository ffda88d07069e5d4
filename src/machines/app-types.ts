/**
 * The app machine's vocabulary: what it remembers (context), what it is told (events) and what it
 * asks for (effects). Results from the runtime carry the `attempt` they answer, so the machine can
 * tell a current result from one that a newer deploy, restart or wake has superseded.
 */
import type { AppPolicy } from './app-policy.js';

/** The phases of spec §3 are the machine's states; `Deleted` is final and never stored. */
export type AppState =
  'Pending' | 'Claiming' | 'Starting' | 'Ready' | 'Suspended' | 'Failed' | 'Deleted';

export type Initiator = 'user' | 'system';
export type TimerKind = 'retry' | 'idle' | 'stable';

export interface AppInput {
  appId: string;
  version: number;
  ttlMs: number;
  policy: AppPolicy;
}

/** How a deploy (or rollback) of one version went: `Pending` until it served or failed. */
export interface LastDeploy {
  version: number;
  outcome: 'Pending' | 'Ready' | 'Failed' | 'Cancelled';
  reason?: string;
  message?: string;
}

export interface AppContext {
  appId: string;
  /** The version this app is deploying (the candidate), or runs. */
  version: number;
  /** The release that serves, or that a wake or restart brings back; null once nothing can. */
  live: number | null;
  /** The newest deploy's outcome; a failed candidate shows here while `live` goes on serving. */
  lastDeploy: LastDeploy | null;
  /** Counts DEPLOY events: a waiting caller sees its deploy was superseded when this moves on. */
  deploys: number;
  /** Id of the current start attempt (deploy, restart, wake, restore); results carry it. */
  attempt: number;
  ttlMs: number;
  policy: AppPolicy;
  /** The routable sandbox; it keeps serving while a redeploy is in flight. */
  serving: string | null;
  /** The claimed sandbox the current attempt is starting. */
  sandbox: string | null;
  /**
   * For the stability window after a switch: the sandbox that served until then, unrouted but
   * running, and the release it runs. Traffic goes back to it if the new one crashes meanwhile.
   */
  previous: { sandboxId: string; version: number } | null;
  /** Absolute end of the stability window; the supervisor arms the timer. */
  stableAt: number | null;
  /** Attempts whose claim the runtime still owes us; late ones are reaped when they land. */
  claimsOwed: number[];
  /** Failed claims in the current attempt. */
  claimTries: number;
  /** Absolute time of the pending claim retry or restart; the supervisor arms the timer. */
  retryAt: number | null;
  /** Absolute idle-suspend deadline while Ready. */
  idleAt: number | null;
  /** Times of recent crashes while Ready, for the crash-loop budget. */
  crashes: number[];
  reason: string;
  message: string;
}

/** Why the app could not start, from the exit of its process. */
export interface ExitFacts {
  code: number | null;
  signal: string | null;
  lastLines: string[];
}

export type AppMachineEvent =
  | { type: 'DEPLOY'; version: number; ttlMs: number }
  | { type: 'PREPARED'; attempt: number }
  | { type: 'PREPARE_FAILED'; attempt: number; reason: string; message: string; at: number }
  | { type: 'CLAIMED'; attempt: number; sandboxId: string }
  /** `jitter` in [0, 1): spreads the retry of a transient failure (app-policy.ts backoff). */
  | {
      type: 'CLAIM_FAILED';
      attempt: number;
      transient: boolean;
      message: string;
      at: number;
      jitter?: number;
    }
  | { type: 'RETRY'; attempt: number }
  /** The stability window after a switch is over: the release that serves has held. */
  | { type: 'STABLE'; attempt: number }
  | { type: 'HEALTHY'; attempt: number; at: number }
  /** `reason`, when the runtime has a more telling code than `StartFailed` (`InstallFailed`). */
  | { type: 'START_FAILED'; attempt: number; message: string; reason?: string; at: number }
  | ({ type: 'APP_EXITED'; sandboxId: string; at: number } & ExitFacts)
  /** The serving sandbox failed its health checks in a row (probed during a stability window). */
  | { type: 'UNHEALTHY'; sandboxId: string; at: number; message: string }
  | { type: 'IDLE_TIMEOUT'; at: number; lastRequestAt?: number }
  | { type: 'SUSPEND' }
  | { type: 'WAKE' }
  | { type: 'RESUME' }
  /**
   * The server restarted. `adopted`: a sandbox the last process left running, with the version it
   * runs; it serves on when that is the live release, and is reaped otherwise.
   */
  | { type: 'RESTORE'; at: number; adopted?: { sandboxId: string; version: number } }
  /** The owner cancels the deploy (or rollback) in flight: the candidate goes, the live one stays. */
  | { type: 'CANCEL'; at: number }
  | { type: 'DELETE' };

export type AppMachineEventType = AppMachineEvent['type'];

/** Effects the supervisor performs; results come back as events. */
export type AppEffect =
  | { type: 'prepare'; attempt: number; version: number }
  | { type: 'claim'; attempt: number; version: number }
  | { type: 'inject'; attempt: number; version: number; sandboxId: string }
  | { type: 'reap'; sandboxId: string }
  /**
   * Out of service but healthy: the supervisor may keep it warm for a while (a rollback to the
   * version it runs is then near-instant) or reap it at once; either way it is never routed again.
   */
  | { type: 'retire'; sandboxId: string }
  /** Reap every retired sandbox of the app now (suspend, delete): it must hold nothing. */
  | { type: 'dropRetired' }
  | { type: 'arm'; timer: TimerKind; at: number; attempt: number }
  | { type: 'cancel'; timer: TimerKind }
  | { type: 'notify'; kind: 'deploy' | 'delete' | 'suspend' | 'resume'; initiator: Initiator }
  /** A deploy's version served (`Ready`) or failed: stored on the version. */
  | {
      type: 'outcome';
      version: number;
      outcome: 'Ready' | 'Failed' | 'Cancelled';
      reason?: string;
      message?: string;
    }
  /** One of Slipway's own lines for the app's log (`[slipway] serving version 3`). */
  | { type: 'note'; version: number; text: string };

export function initialContext(input: AppInput): AppContext {
  return {
    appId: input.appId,
    version: input.version,
    live: null,
    lastDeploy: { version: input.version, outcome: 'Pending' },
    deploys: 1,
    attempt: 1,
    ttlMs: input.ttlMs,
    policy: input.policy,
    serving: null,
    sandbox: null,
    previous: null,
    stableAt: null,
    claimsOwed: [],
    claimTries: 0,
    retryAt: null,
    idleAt: null,
    crashes: [],
    reason: 'Queued',
    message: `version ${input.version} queued`,
  };
}
