/**
 * The app machine (design.md §3): one per app, pure. It decides and records; the supervisor in
 * src/actors performs what it emits (prepare, claim, inject, reap, arm/cancel timers, notify) and
 * sends the results back as events. Every deadline is an absolute time in context, so a persisted
 * snapshot can be re-armed after a restart.
 *
 * Results of a superseded attempt (a newer deploy, restart, wake or restore) fail `isCurrent` and
 * fall through to the root, which reaps a late claim's sandbox and ignores the rest.
 */
import { appSetup } from './app-setup.js';
import { initialContext } from './app-types.js';
import {
  announce,
  candidateCancelled,
  candidateExits,
  candidateFails,
  fail,
  note,
  restore,
  rollBackToPrevious,
  show,
} from './app-transitions.js';

export { appSetup } from './app-setup.js';
export * from './app-types.js';
export { DEFAULT_POLICY, DEFAULT_TTL_MS, type AppPolicy } from './app-policy.js';

export const appMachine = appSetup.createMachine({
  id: 'app',
  context: ({ input }) => initialContext(input),
  initial: 'Pending',
  on: {
    // From any phase. A Ready app's sandbox keeps serving until the new version is Ready.
    // A stability window still open ends here: the release that serves now is the one to keep.
    DEPLOY: {
      target: '.Pending',
      reenter: true,
      actions: ['releaseSandbox', 'retirePrevious', 'beginDeploy', 'newAttempt'],
    },
    DELETE: { target: '.Deleted' },
    // Late results of superseded attempts.
    CLAIMED: { actions: ['forgetClaim', 'reapStray'] },
    CLAIM_FAILED: { actions: ['forgetClaim'] },
    // The old version died while the new one is on its way: nothing left to route to meanwhile.
    APP_EXITED: [
      { guard: 'isServing', actions: [note('exited'), 'releaseServing'] },
      // The release kept for the stability window died: nothing to go back to any more.
      { guard: 'isPrevious', actions: ['releasePrevious'] },
    ],
  },
  states: {
    Pending: {
      entry: [show('Queued'), 'requestPrepare', announce('deploy', 'user')],
      on: {
        PREPARED: {
          guard: 'isCurrent',
          target: 'Claiming',
          actions: ['requestClaim', show('Claiming')],
        },
        PREPARE_FAILED: candidateFails('Prepare'),
        CANCEL: candidateCancelled,
        RESTORE: { actions: ['restoreRuntime', 'newAttempt', 'requestPrepare'] },
      },
    },
    Claiming: {
      exit: ['cancelRetry'],
      on: {
        CLAIMED: {
          guard: 'isCurrent',
          target: 'Starting',
          actions: [
            'forgetClaim',
            'holdSandbox',
            'requestInject',
            show('Starting'),
            note('starting'),
          ],
        },
        CLAIM_FAILED: [
          {
            guard: 'canRetryClaim',
            actions: ['forgetClaim', 'scheduleClaimRetry', show('ClaimRetrying')],
          },
          ...candidateFails('ClaimFailed', 'forgetClaim'),
        ],
        CANCEL: candidateCancelled,
        RETRY: { guard: 'isRetryDue', actions: ['requestClaim', show('Claiming')] },
        RESTORE: [
          { guard: 'isRetryPending', actions: ['restoreRuntime', 'rearmRetry'] },
          { actions: restore },
        ],
      },
    },
    Starting: {
      exit: ['cancelRetry'],
      on: {
        HEALTHY: {
          guard: 'isCurrent',
          target: 'Ready',
          actions: ['promoteSandbox', 'acceptRelease', show('Running'), note('serving')],
        },
        START_FAILED: candidateFails('StartFailed'),
        CANCEL: candidateCancelled,
        // Exited before it ever answered: fail at once, no restart loop hides a broken app.
        APP_EXITED: candidateExits('AppExited'),
        // The restart backoff after a crash is over.
        RETRY: {
          guard: 'isRetryDue',
          target: 'Claiming',
          actions: ['requestClaim', show('Claiming')],
        },
        RESTORE: [
          { guard: 'isRetryPending', actions: ['restoreRuntime', 'rearmRetry'] },
          { target: 'Claiming', actions: restore },
        ],
      },
    },
    Ready: {
      entry: ['armIdle'],
      exit: ['cancelIdle'],
      on: {
        APP_EXITED: [
          rollBackToPrevious,
          {
            guard: 'canRestart',
            target: 'Starting',
            actions: [
              'recordCrash',
              'releaseServing',
              'newAttempt',
              'scheduleRestart',
              show('Restarting'),
              note('restarting'),
            ],
          },
          {
            guard: 'isServing',
            target: 'Failed',
            actions: ['recordCrash', ...fail('CrashLoop').actions],
          },
        ],
        UNHEALTHY: rollBackToPrevious,
        STABLE: { guard: 'isStableDue', actions: ['retirePrevious'] },
        IDLE_TIMEOUT: [
          {
            guard: 'idleElapsed',
            target: 'Suspended',
            actions: [show('Idle'), note('idle'), announce('suspend', 'system')],
          },
          { actions: ['extendIdle'] },
        ],
        SUSPEND: {
          target: 'Suspended',
          actions: [show('Suspended'), note('suspended'), announce('suspend', 'user')],
        },
        RESTORE: [
          {
            guard: 'idleElapsed',
            target: 'Suspended',
            actions: ['restoreRuntime', show('Idle'), announce('suspend', 'system')],
          },
          // Its sandbox outlived the last process: it serves on, never restarted.
          { guard: 'adoptsLive', actions: ['restoreRuntime', 'extendIdle'] },
          { target: 'Claiming', actions: restore },
        ],
      },
    },
    Suspended: {
      entry: ['releaseSandbox', 'releaseServing', 'releasePrevious', 'dropRetired'],
      on: {
        WAKE: {
          target: 'Claiming',
          actions: [
            'newAttempt',
            'requestClaim',
            show('Waking'),
            note('woke'),
            announce('resume', 'system'),
          ],
        },
        RESUME: {
          target: 'Claiming',
          actions: [
            'newAttempt',
            'requestClaim',
            show('Waking'),
            note('woke'),
            announce('resume', 'user'),
          ],
        },
      },
    },
    // Only when nothing can serve: a first deploy that failed, or a serving release that
    // crash-loops (a failed candidate beside a serving release goes back to Ready instead). Nothing
    // is routed, so the phase and the route agree. Only DEPLOY (or DELETE) leaves Failed; a
    // configuration gap would fail again identically.
    Failed: {
      entry: ['releaseSandbox', 'releaseServing', 'releasePrevious', 'dropLive'],
    },
    Deleted: {
      type: 'final',
      entry: [
        'releaseSandbox',
        'releaseServing',
        'releasePrevious',
        'dropRetired',
        announce('delete', 'user'),
      ],
    },
  },
});

export type AppMachine = typeof appMachine;
