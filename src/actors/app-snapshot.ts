/**
 * What of an app machine goes into its store row, and how it comes back after a restart. We store
 * our own `{state, context}` rather than xstate's persisted form: it is small, readable, and
 * `resolveState` rebuilds a snapshot from it without replaying entry actions.
 */
import type { SnapshotFrom } from 'xstate';
import {
  appMachine,
  DEFAULT_TTL_MS,
  initialContext,
  type AppPolicy,
  type AppContext,
  type AppInput,
  type AppState,
} from '../machines/app-machine.js';
import { parseDuration } from '../config/duration.js';
import type { AppMachineState, AppRecord, Phase } from '../persistence/store.js';

export type AppSnapshot = SnapshotFrom<typeof appMachine>;

const PHASES: readonly Phase[] = [
  'Pending',
  'Claiming',
  'Starting',
  'Ready',
  'Suspended',
  'Failed',
];

interface Persisted {
  v: 1;
  state: Phase;
  /** The policy is left out: a restart picks up the configured one. */
  context: Omit<AppContext, 'policy'>;
}

export function stateOf(snapshot: AppSnapshot): AppState {
  return snapshot.value as AppState;
}

export function serialize(snapshot: AppSnapshot): string {
  const context: Partial<AppContext> = { ...snapshot.context };
  delete context.policy;
  const persisted = { v: 1, state: stateOf(snapshot) as Phase, context };
  return JSON.stringify(persisted);
}

/** The row fields the machine owns; the rest of the row belongs to the deploy service. */
export function recordFields(snapshot: AppSnapshot, url: string): AppMachineState {
  const { reason, message, version, live, lastDeploy } = snapshot.context;
  const fields: AppMachineState = {
    phase: stateOf(snapshot) as Phase,
    reason,
    message,
    url,
    currentVersion: version,
    liveVersion: live ?? undefined,
    lastDeploy: lastDeploy ?? undefined,
    snapshot: serialize(snapshot),
  };
  return fields;
}

/**
 * The machine state a stored row resumes in. Rows without a usable snapshot (written before the
 * first transition, or by an older build) resume from their phase when that phase needs no
 * sandbox; otherwise `snapshot` is undefined and the caller deploys the row's version afresh.
 */
export function restore(
  record: AppRecord,
  input: AppInput,
): { snapshot?: AppSnapshot; problem?: string } {
  const base = initialContext(input);
  let problem: string | undefined;
  if (record.snapshot) {
    const persisted = parse(record.snapshot);
    if (persisted) {
      const context: AppContext = {
        ...base,
        ...legacyRelease(persisted),
        ...persisted.context,
        policy: input.policy,
      };
      return { snapshot: appMachine.resolveState({ value: persisted.state, context }) };
    }
    problem = 'unreadable machine snapshot; resuming from the stored phase';
  }
  if (record.phase === 'Suspended' || record.phase === 'Failed') {
    const live = record.phase === 'Suspended' ? input.version : null;
    const { reason, message } = record;
    const context: AppContext = { ...base, live, lastDeploy: null, reason, message };
    return { snapshot: appMachine.resolveState({ value: record.phase, context }), problem };
  }
  return { problem };
}

/** Snapshots stored before releases were tracked: what they ran is what serves. */
function legacyRelease(p: Persisted): Pick<AppContext, 'live' | 'lastDeploy'> {
  const served = p.state === 'Ready' || p.state === 'Suspended';
  return { live: served ? p.context.version : null, lastDeploy: null };
}

function parse(text: string): Persisted | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined; // reported by the caller as an unreadable snapshot
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const p = value as Partial<Persisted>;
  const ok =
    p.v === 1 &&
    typeof p.state === 'string' &&
    PHASES.includes(p.state) &&
    typeof p.context === 'object' &&
    p.context !== null &&
    typeof p.context.attempt === 'number' &&
    typeof p.context.version === 'number';
  return ok ? (p as Persisted) : undefined;
}

/** The machine input to run `version` of a row: its idle ttl (missing or unreadable: 30m). */
export function inputFor(row: AppRecord, version: number, policy: AppPolicy): AppInput {
  const ms = row.ttl ? parseDuration(row.ttl) : undefined;
  const ttlMs = ms === undefined ? DEFAULT_TTL_MS : Math.max(0, ms);
  return { appId: row.id, version, ttlMs, policy };
}
