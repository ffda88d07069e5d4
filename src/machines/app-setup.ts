/**
 * The app machine's named guards and actions. Actions only record and `emit` effects; none waits
 * or does I/O, so `createTestModel` can walk the chart (design.md §3).
 */
import { assertEvent, assign, emit, enqueueActions, setup } from 'xstate';
import { noteText, type NoteKind } from './app-notes.js';
import { backoff, crashesWith } from './app-policy.js';
import { describe, type StatusReason } from './app-status.js';
import type { AppContext, AppEffect, AppInput, AppMachineEvent, Initiator } from './app-types.js';

type Args = { context: AppContext; event: AppMachineEvent };
type Announce = { kind: 'deploy' | 'delete' | 'suspend' | 'resume'; initiator: Initiator };

const isCurrent = ({ context, event }: Args): boolean =>
  'attempt' in event && event.attempt === context.attempt;

/** The sandbox an exit or a failed health check is about. */
const sandboxOf = (event: AppMachineEvent): string | undefined =>
  event.type === 'APP_EXITED' || event.type === 'UNHEALTHY' ? event.sandboxId : undefined;

/** The candidate failed while another release serves: that one stays, the candidate goes. */
const failsBesideServing = (args: Args): boolean =>
  isCurrent(args) && args.context.serving !== null;

/** Nothing runs, but the candidate is not the live release: the app can go back to that one. */
const hasOtherLive = ({ context }: Args): boolean =>
  context.serving === null && context.live !== null && context.live !== context.version;

/** The attempt brings back the release that served (a restart, a wake), not a new one. */
const bringsBackLive = (c: AppContext): boolean => c.live !== null && c.version === c.live;

/** The deploy of the version in flight has not ended yet (restarts and wakes are no deploys). */
const deployPending = (c: AppContext): boolean =>
  c.lastDeploy !== null && c.lastDeploy.version === c.version && c.lastDeploy.outcome === 'Pending';

/** When the app goes idle: the stored deadline, pushed by the last request the router saw. */
const idleDeadline = ({ context, event }: Args): number | null => {
  if (context.idleAt === null) return null;
  const last = event.type === 'IDLE_TIMEOUT' ? event.lastRequestAt : undefined;
  return last === undefined ? context.idleAt : Math.max(context.idleAt, last + context.ttlMs);
};

export const appSetup = setup({
  types: {
    context: {} as AppContext,
    events: {} as AppMachineEvent,
    input: {} as AppInput,
    emitted: {} as AppEffect,
  },
  guards: {
    isCurrent,
    canRetryClaim: (args) =>
      isCurrent(args) &&
      args.event.type === 'CLAIM_FAILED' &&
      args.event.transient &&
      (args.context.claimTries < args.context.policy.maxClaimRetries ||
        bringsBackLive(args.context)),
    isRetryDue: (args) => isCurrent(args) && args.context.retryAt !== null,
    isRetryPending: ({ context }) => context.retryAt !== null,
    isServing: ({ context, event }) =>
      context.serving !== null && sandboxOf(event) === context.serving,
    /** The new release died (or stopped answering) within the stability window. */
    crashesInWindow: ({ context, event }) =>
      context.previous !== null && context.serving !== null && sandboxOf(event) === context.serving,
    isPrevious: ({ context, event }) =>
      context.previous !== null && sandboxOf(event) === context.previous.sandboxId,
    isStableDue: (args) => isCurrent(args) && args.context.previous !== null,
    isStartingSandbox: ({ context, event }) =>
      context.sandbox !== null && sandboxOf(event) === context.sandbox,
    failsBesideServing,
    failsBesideLive: (args) => isCurrent(args) && hasOtherLive(args),
    exitsBesideServing: ({ context, event }) =>
      context.serving !== null && context.sandbox !== null && sandboxOf(event) === context.sandbox,
    exitsBesideLive: (args) =>
      args.context.sandbox !== null &&
      sandboxOf(args.event) === args.context.sandbox &&
      hasOtherLive(args),
    /** A deploy (or rollback) is in flight: a cancel has a candidate to drop. */
    cancels: ({ context }) => deployPending(context),
    cancelsBesideServing: ({ context }) => deployPending(context) && context.serving !== null,
    cancelsBesideLive: ({ context }) =>
      deployPending(context) &&
      context.serving === null &&
      context.live !== null &&
      context.live !== context.version,
    canRestart: ({ context, event }) => {
      if (event.type !== 'APP_EXITED' || event.sandboxId !== context.serving) return false;
      const { crashLimit, crashWindowMs } = context.policy;
      return crashesWith(context.crashes, event.at, crashWindowMs).length < crashLimit;
    },
    /** The restart found the live release still running: it goes on serving. */
    adoptsLive: ({ context, event }) =>
      event.type === 'RESTORE' && context.live !== null && event.adopted?.version === context.live,
    idleElapsed: (args) => {
      const deadline = idleDeadline(args);
      return deadline !== null && 'at' in args.event && deadline <= args.event.at;
    },
  },
  actions: {
    show: assign(({ context, event }, params: { reason: StatusReason }) =>
      describe(params.reason, context, event),
    ),
    announce: emit((_, params: Announce) => ({ type: 'notify' as const, ...params })),
    note: emit(({ context, event }, params: { kind: NoteKind }) => ({
      type: 'note' as const,
      version: context.version,
      text: noteText(params.kind, context, event),
    })),
    beginDeploy: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'DEPLOY');
      const superseded = context.lastDeploy;
      if (superseded !== null && superseded.outcome === 'Pending') {
        enqueue.emit({
          type: 'outcome',
          version: superseded.version,
          outcome: 'Failed',
          reason: 'Superseded',
          message: `version ${event.version} was deployed before this one served`,
        });
      }
      enqueue.assign({
        version: event.version,
        lastDeploy: { version: event.version, outcome: 'Pending' },
        ttlMs: event.ttlMs,
        deploys: context.deploys + 1,
        crashes: [],
      });
    }),
    /** The version served: it is the live release, and its deploy (if one) succeeded. */
    acceptRelease: enqueueActions(({ context, enqueue }) => {
      enqueue.assign({ live: context.version });
      if (!deployPending(context)) return;
      enqueue.assign({ lastDeploy: { version: context.version, outcome: 'Ready' } });
      enqueue.emit({ type: 'outcome', version: context.version, outcome: 'Ready' });
    }),
    /** After `show` described the failure: the deploy in flight (if one) failed with it. */
    recordFailure: enqueueActions(({ context, enqueue }) => {
      if (!deployPending(context)) return;
      const { version, reason, message } = context;
      const failed = { version, outcome: 'Failed', reason, message } as const;
      enqueue.assign({ lastDeploy: failed });
      enqueue.emit({ type: 'outcome', ...failed });
    }),
    /** After `show` described it: the deploy in flight was cancelled, on its version too. */
    recordCancel: enqueueActions(({ context, enqueue }) => {
      if (!deployPending(context)) return;
      const { version, reason, message } = context;
      const ended = { version, outcome: 'Cancelled', reason, message } as const;
      enqueue.assign({ lastDeploy: ended });
      enqueue.emit({ type: 'outcome', ...ended });
    }),
    /** The candidate is gone; the live release is again what this app runs. */
    keepServing: assign(({ context }) => ({ version: context.live ?? context.version })),
    dropLive: assign({ live: null }),
    newAttempt: enqueueActions(({ context, enqueue }) => {
      if (context.retryAt !== null) enqueue.emit({ type: 'cancel', timer: 'retry' });
      enqueue.assign({ attempt: context.attempt + 1, claimTries: 0, retryAt: null });
    }),
    requestPrepare: emit(({ context }) => ({
      type: 'prepare' as const,
      attempt: context.attempt,
      version: context.version,
    })),
    requestClaim: enqueueActions(({ context, enqueue }) => {
      enqueue.assign({ retryAt: null, claimsOwed: [...context.claimsOwed, context.attempt] });
      enqueue.emit({ type: 'claim', attempt: context.attempt, version: context.version });
    }),
    forgetClaim: assign(({ context, event }) => {
      assertEvent(event, ['CLAIMED', 'CLAIM_FAILED']);
      return { claimsOwed: context.claimsOwed.filter((a) => a !== event.attempt) };
    }),
    reapStray: emit(({ event }) => {
      assertEvent(event, 'CLAIMED');
      return { type: 'reap' as const, sandboxId: event.sandboxId };
    }),
    scheduleClaimRetry: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'CLAIM_FAILED');
      const tries = context.claimTries + 1;
      const { claimRetryBaseMs, claimRetryMaxMs } = context.policy;
      const at = event.at + backoff(claimRetryBaseMs, claimRetryMaxMs, tries, event.jitter);
      enqueue.assign({ claimTries: tries, retryAt: at });
      enqueue.emit({ type: 'arm', timer: 'retry', at, attempt: context.attempt });
    }),
    rearmRetry: emit(({ context }) => ({
      type: 'arm' as const,
      timer: 'retry' as const,
      at: context.retryAt ?? 0,
      attempt: context.attempt,
    })),
    cancelRetry: enqueueActions(({ context, enqueue }) => {
      if (context.retryAt === null) return;
      enqueue.emit({ type: 'cancel', timer: 'retry' });
      enqueue.assign({ retryAt: null });
    }),
    holdSandbox: assign(({ event }) => {
      assertEvent(event, 'CLAIMED');
      return { sandbox: event.sandboxId };
    }),
    requestInject: emit(({ context }) => ({
      type: 'inject' as const,
      attempt: context.attempt,
      version: context.version,
      sandboxId: context.sandbox ?? '',
    })),
    /**
     * The route switches to the new sandbox. The one that served until now is retired, or, with a
     * stability window, stays running beside it until the window ends (`STABLE`).
     */
    promoteSandbox: enqueueActions(({ context, event, enqueue }) => {
      const { serving, live, policy } = context;
      enqueue.assign({ serving: context.sandbox, sandbox: null });
      if (serving === null) return;
      const windowMs = policy.stabilityWindowMs;
      if (windowMs <= 0 || live === null || !('at' in event)) {
        enqueue.emit({ type: 'retire', sandboxId: serving });
        return;
      }
      const at = event.at + windowMs;
      enqueue.assign({ previous: { sandboxId: serving, version: live }, stableAt: at });
      enqueue.emit({ type: 'arm', timer: 'stable', at, attempt: context.attempt });
    }),
    /** The window is over (or cut short by a deploy): the previous release's sandbox is retired. */
    retirePrevious: enqueueActions(({ context, enqueue }) => {
      if (context.previous === null) return;
      enqueue.emit({ type: 'retire', sandboxId: context.previous.sandboxId });
      if (context.stableAt !== null) enqueue.emit({ type: 'cancel', timer: 'stable' });
      enqueue.assign({ previous: null, stableAt: null });
    }),
    /** The previous release's sandbox must go now (suspend, delete), or it died by itself. */
    releasePrevious: enqueueActions(({ context, enqueue }) => {
      if (context.previous === null) return;
      enqueue.emit({ type: 'reap', sandboxId: context.previous.sandboxId });
      if (context.stableAt !== null) enqueue.emit({ type: 'cancel', timer: 'stable' });
      enqueue.assign({ previous: null, stableAt: null });
    }),
    /** The new release crashed within the window: the previous one serves again, as the live one. */
    reinstatePrevious: enqueueActions(({ context, enqueue }) => {
      const { previous } = context;
      if (previous === null) return;
      if (context.stableAt !== null) enqueue.emit({ type: 'cancel', timer: 'stable' });
      enqueue.assign({
        serving: previous.sandboxId,
        live: previous.version,
        previous: null,
        stableAt: null,
      });
    }),
    /**
     * After `show` described the crash: the version that went live failed after all. Its deploy
     * had been answered `Ready`; its version and `lastDeploy` now say `Failed`.
     */
    recordCrashAfterSwitch: enqueueActions(({ context, enqueue }) => {
      const { version, reason, message } = context;
      const failed = { version, outcome: 'Failed', reason, message } as const;
      if (context.lastDeploy?.version === version) enqueue.assign({ lastDeploy: failed });
      enqueue.emit({ type: 'outcome', ...failed });
    }),
    releaseSandbox: enqueueActions(({ context, enqueue }) => {
      if (context.sandbox !== null) enqueue.emit({ type: 'reap', sandboxId: context.sandbox });
      enqueue.assign({ sandbox: null });
    }),
    releaseServing: enqueueActions(({ context, enqueue }) => {
      if (context.serving !== null) enqueue.emit({ type: 'reap', sandboxId: context.serving });
      enqueue.assign({ serving: null });
    }),
    dropRetired: emit({ type: 'dropRetired' as const }),
    /**
     * After a server restart the old process's claims and starting sandboxes are gone with it;
     * a sandbox it left running the live release serves on, one running anything else is reaped.
     */
    restoreRuntime: enqueueActions(({ context, event, enqueue }) => {
      const adopted = event.type === 'RESTORE' ? event.adopted : undefined;
      const takes =
        adopted !== undefined && context.live !== null && adopted.version === context.live;
      if (adopted && !takes) enqueue.emit({ type: 'reap', sandboxId: adopted.sandboxId });
      // A previous release's sandbox kept for a stability window is not adopted: it is reaped.
      enqueue.assign({
        serving: takes ? adopted.sandboxId : null,
        sandbox: null,
        claimsOwed: [],
        previous: null,
        stableAt: null,
      });
    }),
    recordCrash: assign(({ context, event }) => {
      assertEvent(event, 'APP_EXITED');
      return { crashes: crashesWith(context.crashes, event.at, context.policy.crashWindowMs) };
    }),
    scheduleRestart: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'APP_EXITED');
      const { restartBaseMs, restartMaxMs } = context.policy;
      const at = event.at + backoff(restartBaseMs, restartMaxMs, context.crashes.length);
      enqueue.assign({ retryAt: at });
      enqueue.emit({ type: 'arm', timer: 'retry', at, attempt: context.attempt });
    }),
    /** On entering Ready, from the time of the event that brought it there. */
    armIdle: enqueueActions(({ context, event, enqueue }) => {
      if (context.ttlMs <= 0 || !('at' in event)) return; // ttl 0: never suspend
      const at = event.at + context.ttlMs;
      enqueue.assign({ idleAt: at });
      enqueue.emit({ type: 'arm', timer: 'idle', at, attempt: context.attempt });
    }),
    extendIdle: enqueueActions(({ context, event, enqueue }) => {
      const at = idleDeadline({ context, event }) ?? context.idleAt ?? 0;
      enqueue.assign({ idleAt: at });
      enqueue.emit({ type: 'arm', timer: 'idle', at, attempt: context.attempt });
    }),
    cancelIdle: enqueueActions(({ context, enqueue }) => {
      if (context.idleAt === null) return;
      enqueue.emit({ type: 'cancel', timer: 'idle' });
      enqueue.assign({ idleAt: null });
    }),
  },
});
