/**
 * The `reason` codes and `message` texts an app shows in each phase. Healthy phases get them too,
 * so the dashboard always says what is happening, not only what went wrong.
 */
import { formatDuration } from '../config/duration.js';
import type { AppContext, AppMachineEvent, ExitFacts } from './app-types.js';

export type StatusReason =
  | 'Queued'
  | 'Claiming'
  | 'ClaimRetrying'
  | 'Restoring'
  | 'Waking'
  | 'Starting'
  | 'Restarting'
  | 'Running'
  /** Ready on the live release after a candidate failed. */
  | 'KeptServing'
  /** Suspended on the live release after a candidate failed while nothing ran. */
  | 'KeptLive'
  | 'Idle'
  | 'Suspended'
  | 'ClaimFailed'
  | 'StartFailed'
  | 'AppExited'
  | 'CrashLoop'
  /** The new release exited or stopped answering within the stability window after going live. */
  | 'CrashedAfterSwitch'
  /** The supervisor's own reason (e.g. `UnknownTemplate`), carried by PREPARE_FAILED. */
  | 'Prepare'
  /** The owner cancelled the deploy in flight. */
  | 'Cancelled';

type Describe = (ctx: AppContext, event: AppMachineEvent) => { reason?: string; message: string };

const MESSAGES: Record<StatusReason, Describe> = {
  Queued: (c) => ({
    message: `version ${c.version} queued${c.serving ? '; the running version keeps serving' : ''}`,
  }),
  Claiming: (c) => ({ message: `claiming a sandbox for version ${c.version}` }),
  ClaimRetrying: (c, e) => ({
    message: `claim failed: ${errorText(e)}; retry ${c.claimTries}${
      c.claimTries <= c.policy.maxClaimRetries
        ? ` of ${c.policy.maxClaimRetries}`
        : ', until the serving version is back'
    } in ${delay(c, e)}`,
  }),
  Restoring: (c) => ({ message: `restoring version ${c.version} after a restart` }),
  Waking: (c) => ({ message: `waking version ${c.version}` }),
  Starting: (c) => ({ message: `starting version ${c.version}` }),
  Restarting: (c, e) => ({
    message: `app exited with ${exitText(e)}; restart ${c.crashes.length} of ${c.policy.crashLimit - 1} in ${delay(c, e)}`,
  }),
  Running: (c) => ({ message: `serving version ${c.version}` }),
  KeptLive: (c) => ({
    reason: 'Suspended',
    message: `version ${c.version} wakes on the next request; ${candidateEnd(c)}`,
  }),
  KeptServing: (c) => ({
    reason: 'Running',
    message: `serving version ${c.version}; ${candidateEnd(c)}`,
  }),
  Idle: (c) => ({ message: `suspended after ${formatDuration(c.ttlMs)} without requests` }),
  Suspended: () => ({ message: 'suspended on request' }),
  ClaimFailed: (c, e) => ({
    message: `could not claim a sandbox for version ${c.version}${c.claimTries ? ` after ${c.claimTries} retries` : ''}: ${errorText(e)}`,
  }),
  StartFailed: (c, e) => ({
    ...(e.type === 'START_FAILED' && e.reason ? { reason: e.reason } : {}),
    message: `version ${c.version} did not start: ${errorText(e)}`,
  }),
  AppExited: (c, e) => ({
    message: `version ${c.version} exited with ${exitText(e)} before it answered${lastLines(e)}`,
  }),
  CrashLoop: (c, e) => ({
    message: `app exited with ${exitText(e)}, ${c.crashes.length} crashes within ${formatDuration(c.policy.crashWindowMs)}${lastLines(e)}`,
  }),
  CrashedAfterSwitch: (c, e) => {
    const within = `within ${formatDuration(c.policy.stabilityWindowMs)} of going live`;
    return e.type === 'UNHEALTHY'
      ? { message: `version ${c.version} stopped answering ${within}: ${e.message}` }
      : { message: `version ${c.version} exited with ${exitText(e)} ${within}${lastLines(e)}` };
  },
  Prepare: (_c, e) =>
    e.type === 'PREPARE_FAILED' ? { reason: e.reason, message: e.message } : { message: '' },
  Cancelled: (c) => ({ message: `the deploy of version ${c.version} was cancelled` }),
};

/** How the candidate beside the live release ended: failed with its reason, or cancelled. */
function candidateEnd(c: AppContext): string {
  const last = c.lastDeploy;
  if (last?.outcome === 'Cancelled') return `the deploy of version ${last.version} was cancelled`;
  return `version ${last?.version ?? '?'} failed (${last?.reason ?? 'unknown'})`;
}

/** The reason and message for `reason` given the context after the transition's other actions. */
export function describe(
  reason: StatusReason,
  ctx: AppContext,
  event: AppMachineEvent,
): { reason: string; message: string } {
  const { reason: own, message } = MESSAGES[reason](ctx, event);
  return { reason: own ?? reason, message };
}

function errorText(e: AppMachineEvent): string {
  return 'message' in e ? e.message : 'unknown error';
}

function delay(c: AppContext, e: AppMachineEvent): string {
  return c.retryAt !== null && 'at' in e
    ? formatDuration(Math.max(0, c.retryAt - e.at))
    : 'a moment';
}

function exitText(e: AppMachineEvent): string {
  if (e.type !== 'APP_EXITED') return 'an unknown status';
  return describeExit(e);
}

export function describeExit(exit: ExitFacts): string {
  return exit.signal ? `signal ${exit.signal}` : `code ${exit.code ?? 'unknown'}`;
}

function lastLines(e: AppMachineEvent): string {
  if (e.type !== 'APP_EXITED' || e.lastLines.length === 0) return '; it printed nothing';
  return `; last lines:\n${e.lastLines.join('\n')}`;
}
