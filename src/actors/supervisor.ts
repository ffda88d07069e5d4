/**
 * One app's supervisor: runs its machine as a root actor, performs the effects the machine emits
 * (runtime work through AppSandboxes, timers at the machine's absolute deadlines), and stores every
 * transition. Nothing here may throw into xstate or the runtime (a throwing listener kills Node), so
 * every callback is guarded and the actor is always subscribed with an error handler.
 */
import { createActor, type Actor } from 'xstate';
import {
  appMachine,
  type AppEffect,
  type AppInput,
  type AppMachineEvent,
  type AppState,
  type Initiator,
} from '../machines/app-machine.js';
import type { AppRecord, Store } from '../persistence/store.js';
import type { WriteRetry } from '../persistence/write-retry.js';
import type { Runtime, Sandbox } from '../runtime/runtime.js';
import { AppActivity, POLL_AFTER_SECONDS, type Activity } from './app-activity.js';
import { AppSandboxes } from './app-sandboxes.js';
import { lifecycleEvent } from './app-events.js';
import { AppRowWriter } from './app-row.js';
import { stateOf, type AppSnapshot } from './app-snapshot.js';
import { NOTE_PREFIX } from '../runtime/runtime.js';
import type { LogRing } from './log-ring.js';
import type { RecentUse } from './recent-use.js';
import type { StartGate } from './start-gate.js';
import { FallbackSandboxes } from './fallback-sandbox.js';
import { DeadlineTimers } from './timers.js';
import { WindowProbe } from './window-probe.js';
import { waitForSnapshot } from './wait-for.js';
import type { Log } from '../logging.js';
import { errorMessage, type AppEvent } from './types.js';
import type { HeadStarts } from './head-starts.js';
import type { WarmKeep } from './warm-keep.js';
import type { StageClock } from '../stage-clock.js';

export interface SupervisorDeps {
  store: Store;
  runtime: Runtime;
  url: string;
  now: () => number;
  jitter: () => number | undefined;
  log: Log;
  publish: (event: AppEvent) => void;
  ring: LogRing;
  keep: WarmKeep;
  /** Deploys' sandboxes started ahead of their machine (head-starts.ts). */
  headStarts: HeadStarts;
  /** Where the row and outcome writes the disk refused wait to be tried again. */
  writes: WriteRetry;
  /** When each app was last used: a request here marks this one. */
  recent: RecentUse;
  /** Bounds the cold starts a restart owes; see queueStarts(). */
  gate: StartGate;
  /** Resolves once no direct route sends visitors to the sandbox: it is about to stop. */
  beforeReap?: (sandbox: Sandbox) => Promise<void>;
}

/** The retry keys of an app's writes: its row, and each version's outcome. */
export const writeKeys = {
  row: (appId: string): string => `app:${appId}`,
  outcome: (appId: string, version: number): string => `outcome:${appId}:${version}`,
  /** Every key of the app, to drop once it is deleted. */
  of: (appId: string) => (key: string) =>
    key === `app:${appId}` || key.startsWith(`outcome:${appId}:`),
};

/** The least time between two events that only bring a newer install or build line. */
const LINE_EVENT_MS = 1_000;

/** Phases on the way to serving: a queued cold start stays queued through them. */
const STARTING: ReadonlySet<AppState> = new Set(['Pending', 'Claiming', 'Starting']);

export class AppSupervisor {
  private readonly actor: Actor<typeof appMachine>;
  private readonly sandboxes: AppSandboxes;
  private readonly timers: DeadlineTimers;
  private lastRequestAt: number | undefined;
  private readonly row: AppRowWriter;
  /** Who caused the transition being processed, for the `initiator` of its events. */
  private cause: Initiator;
  private halted = false;
  /** The restart owes this app a cold start: its claims wait for their turn at the gate. */
  private queued = false;
  private readonly fallbacks = new FallbackSandboxes();
  private readonly probe: WindowProbe;
  private readonly activity: AppActivity;
  /** Set while the activity moves with a transition, whose own `phase` event carries it. */
  private quiet = false;
  /** When the last event of the activity's own went out. */
  private activityEventAt = 0;
  /** Times the stages of the start under way, for its caller's Server-Timing header. */
  private clock: StageClock | undefined;

  constructor(
    readonly appId: string,
    private readonly deps: SupervisorDeps,
    input: AppInput,
    snapshot?: AppSnapshot,
    initiator: Initiator = 'system',
  ) {
    this.cause = initiator;
    this.row = new AppRowWriter(deps.store, appId, deps.url);
    this.timers = new DeadlineTimers(deps.now);
    this.activity = new AppActivity(deps.now, (what) => {
      if (this.quiet) return;
      // npm's and a build's lines come in bursts: their events are spaced, a new step's are not.
      const at = deps.now();
      if (what === 'line' && at - this.activityEventAt < LINE_EVENT_MS) return;
      this.activityEventAt = at;
      this.publish('phase', 'system');
    });
    // A new actor without a stored state is a deploy of its version: queued from now on.
    if (!snapshot) this.quietly(() => this.activity.begin(input.version));
    const guard = (what: string, fn: () => void) => this.guard(what, fn);
    const send = (e: AppMachineEvent) => this.send(e);
    this.sandboxes = new AppSandboxes(appId, {
      ...deps,
      send,
      halted: () => this.halted,
      guard,
      touch: () => this.touch(),
      heard: (line) => this.activity.line(line),
      startSlot: () => (this.queued ? deps.gate.enter(appId) : undefined),
      current: (attempt) => this.snapshot().context.attempt === attempt,
      clock: () => this.clock,
    });
    this.probe = new WindowProbe({
      everyMs: input.policy.healthProbeMs,
      health: (id) => this.sandboxes.health(id),
      unhealthy: (sandboxId, message) =>
        guard('health', () => send({ type: 'UNHEALTHY', sandboxId, message, at: deps.now() })),
    });
    this.actor = createActor(appMachine, snapshot ? { input, snapshot } : { input });
    this.actor.on('*', (effect) => this.guard('effect', () => this.perform(effect)));
    this.actor.subscribe({
      next: (s) => this.guard('persist', () => this.persist(s)),
      error: (err) => this.guard('actor error', () => this.broke(err)),
    });
    this.actor.start();
    this.cause = 'system';
  }

  /** False once deleted, stopped or broken; the registry then starts a new actor on demand. */
  get alive(): boolean {
    return !this.halted;
  }

  snapshot(): AppSnapshot {
    return this.actor.getSnapshot();
  }

  /** A command or a result, through the actor's mailbox: one at a time, in order. */
  send(event: AppMachineEvent, initiator: Initiator = 'system'): void {
    if (this.halted) return;
    // An owner's command starts at once: only what the restart itself owes waits in line.
    if (initiator === 'user') this.queued = false;
    this.beginActivity(event);
    this.switchingTo(event);
    this.cause = initiator;
    try {
      this.actor.send(event);
    } finally {
      this.cause = 'system';
    }
  }

  /** The next start's stages are timed on `clock` (a newer deploy's clock replaces it). */
  timeWith(clock: StageClock | undefined): void {
    this.clock = clock;
  }

  /**
   * The restart must start this app again (nothing of it survived): its claims, until it settles
   * or its owner acts, wait for their turn at the gate, most recently used apps first.
   */
  queueStarts(): void {
    this.queued = true;
  }

  /**
   * The server restarted: the stored state resumes, with the sandbox the last process left
   * running this app, if any. The machine decides whether it serves on; if not, it is reaped.
   * A start it needs waits for its turn (queueStarts).
   */
  restore(at: number, adopted?: { sandbox: Sandbox; version: number }): void {
    this.queued = true;
    if (adopted) this.sandboxes.hold(adopted.sandbox, adopted.version);
    const sandboxId = adopted?.sandbox.id;
    const taken = adopted && { sandboxId: adopted.sandbox.id, version: adopted.version };
    this.send({ type: 'RESTORE', at, ...(taken ? { adopted: taken } : {}) });
    // The restart takes up a start the last process left in flight.
    const now = this.snapshot();
    if (STARTING.has(stateOf(now))) {
      this.quietly(() => this.activity.begin(now.context.version));
      this.trackActivity(now);
      this.publish('phase', 'system');
    }
    // Serving (adopted), Suspended, Failed: nothing to start, and a later wake is a visitor's.
    if (!STARTING.has(stateOf(this.snapshot()))) this.queued = false;
    // A phase with nothing to resume (Suspended, Failed) did not take it either.
    if (sandboxId && this.snapshot().context.serving !== sandboxId) this.sandboxes.reap(sandboxId);
  }

  /** A rollback is on its way: the sandboxes it may take back are health-checked now. */
  probeAhead(): void {
    if (!this.halted) this.sandboxes.probeAhead(this.snapshot().context.serving);
  }

  serving(): Sandbox | undefined {
    return this.halted ? undefined : this.sandboxes.get(this.snapshot().context.serving);
  }

  /**
   * Where the router sends a request: the serving sandbox; within a stability window, one whose
   * connections fall back to the previous release's sandbox when the new one dies under them.
   */
  routable(): Sandbox | undefined {
    const serving = this.serving();
    const { previous } = this.snapshot().context;
    const fallback = previous ? this.sandboxes.get(previous.sandboxId) : undefined;
    if (serving && fallback) return this.fallbacks.over(serving, fallback);
    this.fallbacks.forget();
    return serving;
  }

  touch(): void {
    this.lastRequestAt = this.deps.now();
    this.deps.recent.mark(this.appId, this.lastRequestAt);
  }

  /** What the deploy, rollback or resume in flight is doing; undefined when none is. */
  activityNow(): Activity | undefined {
    return this.halted ? undefined : this.activity.view;
  }

  /** The row as last written or about to be, for callers that outlive it (delete). */
  record(): AppRecord | undefined {
    return this.row.last();
  }

  /** True while the machine's latest state waits for a write the store refused. */
  get unsaved(): boolean {
    return this.row.pending;
  }

  /** Resolves with the snapshot once `done` holds, the actor ends, `waitMs` passes or `cut` aborts. */
  waitFor(
    done: (s: AppSnapshot) => boolean,
    waitMs: number,
    cut?: AbortSignal,
  ): Promise<AppSnapshot> {
    return this.halted
      ? Promise.resolve(this.snapshot())
      : waitForSnapshot(this.actor, done, waitMs, cut);
  }

  /** Waits for the reaps already asked for. */
  settle(): Promise<void> {
    return this.sandboxes.settle();
  }

  /** Server shutdown: timers off, the actor stopped, the row left as it is for the next start. */
  stop(): void {
    this.halted = true;
    this.timers.clear();
    this.probe.stop();
    this.actor.stop();
  }

  private perform(effect: AppEffect): void {
    const { sandboxes } = this;
    switch (effect.type) {
      case 'prepare':
        // Next turn: the Pending row is stored and visible before the checks answer.
        setImmediate(() =>
          this.guard('prepare', () => sandboxes.prepare(effect.attempt, effect.version)),
        );
        return;
      case 'claim':
        void sandboxes.claim(effect.attempt, effect.version);
        return;
      case 'inject':
        void sandboxes.inject(effect.attempt, effect.version, effect.sandboxId);
        return;
      case 'reap':
        return sandboxes.reap(effect.sandboxId);
      case 'retire':
        return sandboxes.retire(effect.sandboxId);
      case 'dropRetired':
        return sandboxes.dropRetired();
      case 'arm':
        return this.timers.arm(effect.timer, effect.at, () =>
          this.guard('timer', () => this.fire(effect)),
        );
      case 'cancel':
        return this.timers.cancel(effect.timer);
      case 'notify':
        return this.publish(effect.kind, effect.initiator);
      case 'outcome':
        return this.settled(effect);
      case 'note':
        return this.note(effect.version, effect.text);
    }
  }

  /** A deploy ended: its version says how; a rollback that served says so in the log. */
  private settled(effect: Extract<AppEffect, { type: 'outcome' }>): void {
    const { version, outcome, reason, message } = effect;
    const { store, writes } = this.deps;
    // Unsynced, as the machine's rows are (AppRowWriter): the deploy's audit event, written before
    // its answer, syncs it.
    writes.run(writeKeys.outcome(this.appId, version), () =>
      store.unsynced(() =>
        store.setVersionOutcome(this.appId, version, { outcome, reason, message }),
      ),
    );
    const from = store.getVersion(this.appId, version)?.rolledBackFrom;
    if (outcome === 'Ready' && from !== undefined) this.note(version, `rolled back to ${from}`);
  }

  private note(version: number, text: string): void {
    const time = new Date(this.deps.now()).toISOString();
    this.deps.ring.push({ time, stream: 'system', text: `${NOTE_PREFIX}${text}`, version });
  }

  private fire(timer: Extract<AppEffect, { type: 'arm' }>): void {
    // The machine compares the deadline with the last request itself: touch() stays a field write.
    if (timer.timer === 'retry') this.send({ type: 'RETRY', attempt: timer.attempt });
    else if (timer.timer === 'stable') this.send({ type: 'STABLE', attempt: timer.attempt });
    else
      this.send({ type: 'IDLE_TIMEOUT', at: this.deps.now(), lastRequestAt: this.lastRequestAt });
  }

  private persist(snapshot: AppSnapshot): void {
    // While a stability window is open, the release that went live is checked for health.
    const { previous, serving } = snapshot.context;
    const windowOpen = snapshot.status === 'active' && previous !== null && serving !== null;
    this.probe.follow(windowOpen ? serving : undefined);
    if (snapshot.status === 'active') {
      if (!STARTING.has(stateOf(snapshot))) this.queued = false;
      const before = this.activity.view?.step;
      this.trackActivity(snapshot);
      const moved = this.activity.view?.step !== before;
      if (this.row.stage(snapshot) || moved) this.publish('phase', this.cause);
      this.deps.writes.run(this.rowKey, () => this.row.flush());
      return;
    }
    // Deleted: the registry removes the row; late claims are reaped as they land.
    this.halted = true;
    this.timers.clear();
  }

  /** A deploy (or rollback), or a resume or wake of a Suspended app, is in flight from now on. */
  private beginActivity(event: AppMachineEvent): void {
    const { value, context } = this.snapshot();
    const wakes = (event.type === 'RESUME' || event.type === 'WAKE') && value === 'Suspended';
    const version = event.type === 'DEPLOY' ? event.version : wakes ? context.version : undefined;
    if (version !== undefined) this.quietly(() => this.activity.begin(version));
  }

  /**
   * The candidate of a redeploy or rollback answered while another release serves: the machine is
   * about to move the traffic to it (the router's pointer, then the direct route). The step and a
   * note go out first, so that the event stream and the log show the switch before `Ready`.
   */
  private switchingTo(event: AppMachineEvent): void {
    if (event.type !== 'HEALTHY' || !this.activity.view) return;
    const snapshot = this.snapshot();
    const { attempt, serving, version } = snapshot.context;
    if (stateOf(snapshot) !== 'Starting' || event.attempt !== attempt || serving === null) return;
    this.note(version, `switching traffic to version ${version}`);
    this.activity.switching();
  }

  /** The activity follows the phase; its own `phase` event is the transition's. */
  private trackActivity(snapshot: AppSnapshot): void {
    const { version } = snapshot.context;
    const laneOf = () => this.deps.store.getVersion(this.appId, version)?.lane;
    this.quietly(() => this.activity.phase(stateOf(snapshot), version, laneOf));
  }

  /** Moves the activity without an event of its own: the transition that follows has one. */
  private quietly(fn: () => void): void {
    this.quiet = true;
    try {
      fn();
    } finally {
      this.quiet = false;
    }
  }

  private publish(kind: AppEvent['kind'], initiator: Initiator): void {
    const { context, value: phase } = this.snapshot();
    const { version, reason, message } = context;
    const facts = { appId: this.appId, owner: this.row.owner(), phase, version, reason, message };
    const event = lifecycleEvent(kind, facts, initiator, this.deps.now());
    const activity = this.activity.view;
    if (activity && phase !== 'Deleted') {
      event.activity = activity;
      event.poll_after_seconds = POLL_AFTER_SECONDS[activity.step];
    }
    this.deps.publish(event);
  }

  /** The machine threw: this app stops, shows why, and releases its sandboxes; others go on. */
  private broke(err: unknown): void {
    this.halted = true;
    this.timers.clear();
    this.probe.stop();
    this.deps.log('error', 'app actor failed', { app: this.appId, err: errorMessage(err) });
    this.sandboxes.reapAll();
    const message = `internal error: ${errorMessage(err)}; deploy again to recover`;
    this.deps.writes.run(this.rowKey, () => this.row.fail(message));
  }

  private get rowKey(): string {
    return writeKeys.row(this.appId);
  }

  private guard(what: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.deps.log('error', `app supervisor: ${what} failed`, {
        app: this.appId,
        err: errorMessage(err),
      });
    }
  }
}
