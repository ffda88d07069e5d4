/**
 * The model side of the app machine's model-based test: which events each state accepts (as
 * labelled variants the real system can be made to produce), how a snapshot is abstracted so the
 * graph stays finite, and how each label is concretized against a snapshot.
 */
import type { SnapshotFrom } from 'xstate';
import type { AppContext, AppMachineEvent, AppState } from '../../src/machines/app-machine.js';
import { appMachine } from '../../src/machines/app-machine.js';
import { UNHEALTHY_MESSAGE } from '../../src/actors/window-probe.js';
import { TEST_POLICY } from '../actors/harness.js';

export type ModelSnapshot = SnapshotFrom<typeof appMachine>;
export type Labelled = AppMachineEvent & { label: string };

export const APP = 'm';
/** Shorter than the idle ttl: a window's end is the next timer to fire while it is open. */
export const WINDOW_MS = 50;
/** Three failed probes fit in a window. */
export const PROBE_MS = 10;
export const POLICY = { ...TEST_POLICY, stabilityWindowMs: WINDOW_MS, healthProbeMs: PROBE_MS };
export const INPUT = { appId: APP, version: 1, ttlMs: 1_000, policy: POLICY };
/** The model's clock: every result arrives "now"; only idle deadlines are compared against it. */
const AT = 1_000;
export const EXIT = { code: 3, signal: null, lastLines: ['boom'] };
export const PREPARE_MESSAGE =
  'template "node" is not available on the local runtime (available: static); set the runtime template to one of them';

interface Variant {
  /** True when the real system can produce this event in this state. */
  when: (state: AppState, c: AppContext) => boolean;
  make: (c: AppContext) => AppMachineEvent;
}

const claiming = (s: AppState, c: AppContext) =>
  s === 'Claiming' && c.claimsOwed.includes(c.attempt);
const stale = (c: AppContext) => c.claimsOwed.find((a) => a !== c.attempt) ?? -1;
const starting = (s: AppState, c: AppContext) => s === 'Starting' && c.sandbox !== null;
const ready = (s: AppState) => s === 'Ready';
const owedStale = (_s: AppState, c: AppContext) => stale(c) !== -1;
/** Ready, and no stability window open: its end would be the next timer, not the idle one. */
const readySettled = (s: AppState, c: AppContext) => ready(s) && c.stableAt === null;

export const VARIANTS: Record<string, Variant> = {
  DEPLOY: {
    when: () => true,
    // Every deploy stores a new version, whatever the one it replaces.
    make: (c) => ({ type: 'DEPLOY', version: c.deploys + 1, ttlMs: INPUT.ttlMs }),
  },
  DELETE: { when: () => true, make: () => ({ type: 'DELETE' }) },
  PREPARED: {
    when: (s) => s === 'Pending',
    make: (c) => ({ type: 'PREPARED', attempt: c.attempt }),
  },
  PREPARE_FAILED: {
    when: (s) => s === 'Pending',
    make: (c) => ({
      type: 'PREPARE_FAILED',
      attempt: c.attempt,
      reason: 'UnknownTemplate',
      message: PREPARE_MESSAGE,
      at: AT,
    }),
  },
  'CLAIMED:current': {
    when: claiming,
    make: (c) => ({ type: 'CLAIMED', attempt: c.attempt, sandboxId: `m-${c.attempt}` }),
  },
  'CLAIMED:stale': {
    when: owedStale,
    make: (c) => ({ type: 'CLAIMED', attempt: stale(c), sandboxId: `m-${stale(c)}` }),
  },
  'CLAIM_FAILED:transient': {
    when: claiming,
    make: (c) => ({
      type: 'CLAIM_FAILED',
      attempt: c.attempt,
      transient: true,
      message: 'busy',
      at: AT,
    }),
  },
  'CLAIM_FAILED:fatal': {
    when: claiming,
    make: (c) => ({
      type: 'CLAIM_FAILED',
      attempt: c.attempt,
      transient: false,
      message: 'busy',
      at: AT,
    }),
  },
  'CLAIM_FAILED:stale': {
    when: owedStale,
    make: (c) => ({
      type: 'CLAIM_FAILED',
      attempt: stale(c),
      transient: true,
      message: 'busy',
      at: AT,
    }),
  },
  RETRY: {
    when: (_s, c) => c.retryAt !== null,
    make: (c) => ({ type: 'RETRY', attempt: c.attempt }),
  },
  HEALTHY: { when: starting, make: (c) => ({ type: 'HEALTHY', attempt: c.attempt, at: AT }) },
  START_FAILED: {
    when: starting,
    make: (c) => ({ type: 'START_FAILED', attempt: c.attempt, message: 'bad', at: AT }),
  },
  'APP_EXITED:starting': {
    when: starting,
    make: (c) => ({ type: 'APP_EXITED', sandboxId: c.sandbox ?? '', at: AT, ...EXIT }),
  },
  'APP_EXITED:serving': {
    when: (_s, c) => c.serving !== null,
    make: (c) => ({ type: 'APP_EXITED', sandboxId: c.serving ?? '', at: AT, ...EXIT }),
  },
  // The release kept running for the stability window dies by itself.
  'APP_EXITED:previous': {
    when: (_s, c) => c.previous !== null,
    make: (c) => ({
      type: 'APP_EXITED',
      sandboxId: c.previous?.sandboxId ?? '',
      at: AT,
      ...EXIT,
    }),
  },
  // The release that went live stops answering its health checks within the window.
  UNHEALTHY: {
    when: (s, c) => ready(s) && c.previous !== null && c.serving !== null,
    make: (c) => ({
      type: 'UNHEALTHY',
      sandboxId: c.serving ?? '',
      at: AT,
      message: UNHEALTHY_MESSAGE,
    }),
  },
  STABLE: {
    when: (_s, c) => c.stableAt !== null,
    make: (c) => ({ type: 'STABLE', attempt: c.attempt }),
  },
  'IDLE_TIMEOUT:elapsed': {
    when: (s, c) => readySettled(s, c) && c.idleAt !== null,
    make: (c) => ({ type: 'IDLE_TIMEOUT', at: c.idleAt ?? 0 }),
  },
  'IDLE_TIMEOUT:touched': {
    when: (s, c) => readySettled(s, c) && c.idleAt !== null,
    make: (c) => ({ type: 'IDLE_TIMEOUT', at: c.idleAt ?? 0, lastRequestAt: c.idleAt ?? 0 }),
  },
  SUSPEND: { when: ready, make: () => ({ type: 'SUSPEND' }) },
  // The owner cancels the deploy in flight (POST /v1/apps/{id}/cancel, cancel_deploy).
  CANCEL: {
    when: (s, c) =>
      ['Pending', 'Claiming', 'Starting'].includes(s) &&
      c.lastDeploy?.outcome === 'Pending' &&
      c.lastDeploy.version === c.version,
    make: () => ({ type: 'CANCEL', at: AT }),
  },
  WAKE: { when: (s) => s === 'Suspended', make: () => ({ type: 'WAKE' }) },
  RESUME: { when: (s) => s === 'Suspended', make: () => ({ type: 'RESUME' }) },
  RESTORE: {
    when: (s) => ['Pending', 'Claiming', 'Starting'].includes(s),
    make: () => ({ type: 'RESTORE', at: AT }),
  },
  'RESTORE:fresh': { when: ready, make: (c) => ({ type: 'RESTORE', at: (c.idleAt ?? AT) - 1 }) },
  'RESTORE:elapsed': { when: ready, make: (c) => ({ type: 'RESTORE', at: c.idleAt ?? AT }) },
  // Restart continuity: the sandbox serving the live release outlived the old server. (A window's
  // previous sandbox would outlive it too, and the registry reaps it as no app's: not modelled.)
  'RESTORE:adopt': {
    when: (s, c) =>
      c.serving !== null &&
      c.previous === null &&
      ['Pending', 'Claiming', 'Starting', 'Ready'].includes(s),
    make: (c) => ({
      type: 'RESTORE',
      at: c.idleAt !== null ? c.idleAt - 1 : AT,
      adopted: { sandboxId: c.serving ?? '', version: c.live ?? 0 },
    }),
  },
  'RESTORE:adopt-elapsed': {
    when: (s, c) => ready(s) && c.serving !== null && c.previous === null && c.idleAt !== null,
    make: (c) => ({
      type: 'RESTORE',
      at: c.idleAt ?? AT,
      adopted: { sandboxId: c.serving ?? '', version: c.live ?? 0 },
    }),
  },
};

export const stateOf = (s: { value: unknown }): AppState => s.value as AppState;

/** Every labelled event the real system can produce in this state. */
export function eventsFor(snapshot: ModelSnapshot): Labelled[] {
  if (snapshot.status !== 'active') return [];
  const state = stateOf(snapshot);
  return Object.entries(VARIANTS)
    .filter(([, v]) => v.when(state, snapshot.context))
    .map(([label, v]) => ({ ...v.make(snapshot.context), label }));
}

/** The label's event made against `snapshot` (the model's own replay of the path). */
export function concretize(label: string, snapshot: ModelSnapshot): AppMachineEvent {
  const variant = VARIANTS[label];
  if (!variant?.when(stateOf(snapshot), snapshot.context)) {
    throw new Error(`${label} cannot happen in ${stateOf(snapshot)}`);
  }
  return variant.make(snapshot.context);
}

/**
 * What the test compares and what keeps the graph finite: the phase plus the facts guards read.
 * Attempt numbers, times and sandbox ids are left out; they are compared on each walk instead.
 */
export function abstract(value: unknown, c: AppContext): string {
  return JSON.stringify([
    value,
    c.serving !== null,
    c.sandbox !== null,
    c.retryAt !== null,
    c.idleAt !== null,
    // Every way into Claiming starts a fresh attempt; past the budget only the live release's
    // retries go on, all alike.
    value === 'Claiming' ? Math.min(c.claimTries, TEST_POLICY.maxClaimRetries) : 0,
    c.crashes.length,
    c.claimsOwed.includes(c.attempt),
    c.claimsOwed.some((a) => a !== c.attempt),
    c.live !== null,
    c.lastDeploy?.outcome ?? null,
    c.previous !== null,
  ]);
}

/** The context facts the real system must agree on with the model after every step. */
export function facts(c: AppContext) {
  return {
    version: c.version,
    live: c.live,
    lastDeploy: c.lastDeploy,
    deploys: c.deploys,
    attempt: c.attempt,
    claimsOwed: c.claimsOwed,
    claimTries: c.claimTries,
    crashes: c.crashes.length,
    serving: c.serving !== null,
    sandbox: c.sandbox !== null,
    retryAt: c.retryAt !== null,
    idleAt: c.idleAt !== null,
    previous: c.previous?.version ?? null,
    stableAt: c.stableAt !== null,
    reason: c.reason,
    message: c.message,
  };
}
