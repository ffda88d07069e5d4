/**
 * Transitions the app chart uses in several places, named after what they mean. Above all the
 * blue/green rule (design.md §3): when a candidate release fails at any stage, what happens
 * depends only on what else can serve.
 */
import type { NoteKind } from './app-notes.js';
import type { StatusReason } from './app-status.js';
import type { Initiator } from './app-types.js';

export const show = (reason: StatusReason) => ({ type: 'show', params: { reason } }) as const;
export const note = (kind: NoteKind) => ({ type: 'note', params: { kind } }) as const;
export const announce = (kind: 'deploy' | 'delete' | 'suspend' | 'resume', initiator: Initiator) =>
  ({ type: 'announce', params: { kind, initiator } }) as const;

export const restore = ['restoreRuntime', 'newAttempt', 'requestClaim', show('Restoring')] as const;

type First = 'forgetClaim' | 'recordCrash';

/** The failure goes on the candidate's version and `lastDeploy`, and the log says so. */
const recorded = (failure: StatusReason) =>
  [show(failure), 'recordFailure', note('failed')] as const;

/** A release serves beside the candidate: it stays routed, the app stays Ready on it. */
const keepServing = (failure: StatusReason, first: readonly First[]) =>
  ({
    target: 'Ready',
    actions: [...first, 'releaseSandbox', ...recorded(failure), 'keepServing', show('KeptServing')],
  }) as const;

/**
 * Nothing runs, but a live release exists (the app was Suspended, the server restarted, or the
 * serving sandbox died meanwhile): the app goes back to it, Suspended, and wakes it on demand.
 */
const keepLive = (failure: StatusReason, first: readonly First[]) =>
  ({
    target: 'Suspended',
    actions: [...first, 'releaseSandbox', ...recorded(failure), 'keepServing', show('KeptLive')],
  }) as const;

/** Nothing can serve: the app is Failed with why. */
export const fail = (failure: StatusReason, ...first: First[]) =>
  ({ target: 'Failed', actions: [...first, ...recorded(failure)] }) as const;

/** A current result saying the candidate cannot run (PREPARE_FAILED, CLAIM_FAILED, START_FAILED). */
export const candidateFails = (failure: StatusReason, ...first: First[]) =>
  [
    { guard: 'failsBesideServing', ...keepServing(failure, first) },
    { guard: 'failsBesideLive', ...keepLive(failure, first) },
    { guard: 'isCurrent', ...fail(failure, ...first) },
  ] as const;

/**
 * The owner cancelled the deploy in flight: like a failure (what serves goes on serving), but
 * recorded `Cancelled`, and a new attempt so that the cancelled one's late results are ignored.
 */
const cancelled = [
  'newAttempt',
  'releaseSandbox',
  show('Cancelled'),
  'recordCancel',
  note('cancelled'),
] as const;

export const candidateCancelled = [
  {
    guard: 'cancelsBesideServing',
    target: 'Ready',
    actions: [...cancelled, 'keepServing', show('KeptServing')],
  },
  {
    guard: 'cancelsBesideLive',
    target: 'Suspended',
    actions: [...cancelled, 'keepServing', show('KeptLive')],
  },
  { guard: 'cancels', target: 'Failed', actions: cancelled },
] as const;

/** The candidate's process exited before it ever answered. */
export const candidateExits = (failure: StatusReason) =>
  [
    { guard: 'exitsBesideServing', ...keepServing(failure, []) },
    { guard: 'exitsBesideLive', ...keepLive(failure, []) },
    { guard: 'isStartingSandbox', ...fail(failure) },
  ] as const;

/**
 * The new release exited or failed its health checks within the stability window: the previous
 * release, still running, serves again at once, and the new one is recorded Failed. No restart:
 * it failed on real traffic.
 */
export const rollBackToPrevious = {
  guard: 'crashesInWindow',
  actions: [
    'releaseServing',
    'reinstatePrevious',
    show('CrashedAfterSwitch'),
    'recordCrashAfterSwitch',
    note('failed'),
    'keepServing',
    show('KeptServing'),
  ],
} as const;
