/**
 * The runtime-facing half of a supervisor: the sandboxes one app holds (serving, starting and
 * retired ones kept warm), the runtime calls the machine asks for, and the app's log ring. Results
 * go back through `send` as machine events; nothing here decides what happens next.
 */
import type { AppMachineEvent } from '../machines/app-machine.js';
import type { Store } from '../persistence/store.js';
import {
  AppExitError,
  RuntimeError,
  type AppExit,
  type LogLine,
  type Runtime,
  type Sandbox,
} from '../runtime/runtime.js';
import type { AppLogLine, LogRing } from './log-ring.js';
import { planStart, type StartPlan } from './start-plan.js';
import type { ReleaseSlot } from './start-gate.js';
import { AppWarmth } from './app-warmth.js';
import type { HeadStart, HeadStarts } from './head-starts.js';
import type { SandboxEvents } from './held-events.js';
import type { Log } from '../logging.js';
import { errorMessage } from './types.js';
import type { WarmKeep } from './warm-keep.js';
import type { StageClock } from '../stage-clock.js';

export interface SandboxDeps {
  store: Store;
  runtime: Runtime;
  now: () => number;
  /** Spreads a transient failure's retry (app-policy.ts backoff). */
  jitter: () => number | undefined;
  log: Log;
  /** Delivers a result to the app's machine (a no-op once the machine is gone). */
  send: (event: AppMachineEvent) => void;
  /** True once the app is deleted or the server stops: late sandboxes are reaped, not offered. */
  halted: () => boolean;
  /** Runs a runtime callback so that a throw is logged, never thrown into the runtime. */
  guard: (what: string, fn: () => void) => void;
  /** The app's log lines; owned by the registry so they outlive this supervisor's sandboxes. */
  ring: LogRing;
  /** Retired sandboxes kept warm, shared by every app. */
  keep: WarmKeep;
  /** Deploys' sandboxes started ahead of their machine, shared by every app. */
  headStarts: HeadStarts;
  /** A visitor reached the app directly (not through the router): the app is not idle. */
  touch: () => void;
  /** Every line a held sandbox prints, once it is in the app's log (the activity reads them). */
  heard: (line: AppLogLine) => void;
  /**
   * The turn of a cold start the restart queue bounds (undefined: this one is not queued); it
   * resolves undefined when the server stops before the turn came.
   */
  startSlot: () => Promise<ReleaseSlot | undefined> | undefined;
  /** True while `attempt` is the machine's current start attempt. */
  current: (attempt: number) => boolean;
  /** The clock timing the start under way, if its caller asked for one. */
  clock: () => StageClock | undefined;
  /** Resolves once no direct route sends visitors to the sandbox: it is about to stop. */
  beforeReap?: (sandbox: Sandbox) => Promise<void>;
}

export class AppSandboxes {
  private readonly held = new Map<string, Sandbox>();
  /** The version each held sandbox runs, for its log lines. */
  private readonly versions = new Map<string, number>();
  private readonly reaps = new Set<Promise<void>>();
  /** Queued cold starts under way, by sandbox: the slot is given back once its start ends. */
  private readonly slots = new Map<string, ReleaseSlot>();
  /** Claimed from a head start: their inject is the one already under way. */
  private readonly ahead = new Map<string, HeadStart>();
  private readonly ring: LogRing;
  private readonly warmth: AppWarmth;
  /**
   * The current attempt's plan: its prepare, claim and inject read the same rows within a few ms,
   * and each read opens the sealed env. A new attempt (deploy, retry, wake) reads them afresh.
   */
  private planned: { attempt: number; version: number; plan: StartPlan } | undefined;

  constructor(
    private readonly appId: string,
    private readonly deps: SandboxDeps,
  ) {
    this.ring = deps.ring;
    this.warmth = new AppWarmth(appId, {
      ...deps,
      held: (id) => this.held.get(id),
      reap: (id) => this.reap(id),
    });
  }

  get(id: string | null): Sandbox | undefined {
    return id === null ? undefined : this.held.get(id);
  }

  private plan(attempt: number, version: number): StartPlan {
    const last = this.planned;
    if (last?.attempt === attempt && last.version === version) return last.plan;
    const plan = planStart(this.deps.store, this.deps.runtime, this.appId, version);
    this.planned = { attempt, version, plan };
    return plan;
  }

  /** Configuration checks before any sandbox exists; they repeat identically on every retry. */
  prepare(attempt: number, version: number): void {
    const plan = this.plan(attempt, version);
    this.deps.send(
      plan.ok
        ? { type: 'PREPARED', attempt }
        : {
            type: 'PREPARE_FAILED',
            attempt,
            reason: plan.reason,
            message: plan.message,
            at: this.deps.now(),
          },
    );
  }

  async claim(attempt: number, version: number): Promise<void> {
    const { send, now } = this.deps;
    const plan = this.plan(attempt, version);
    if (!plan.ok) {
      return send({
        type: 'CLAIM_FAILED',
        attempt,
        transient: false,
        message: plan.message,
        at: now(),
      });
    }
    this.deps.clock()?.mark('prepare');
    const head = this.deps.headStarts.take(this.appId, plan.spec);
    const started = head && (await head.claimed);
    if (head && started) {
      this.deps.clock()?.mark('claim');
      this.hold(started.sandbox, version, started.events);
      this.ahead.set(started.sandbox.id, head);
      if (this.deps.halted()) return this.reap(started.sandbox.id);
      return send({ type: 'CLAIMED', attempt, sandboxId: started.sandbox.id });
    }
    const warm = await this.warmth.take(plan.spec);
    if (warm) {
      this.deps.clock()?.mark('claim');
      if (this.deps.halted()) return this.reap(warm.id);
      this.versions.set(warm.id, version);
      return send({ type: 'CLAIMED', attempt, sandboxId: warm.id });
    }
    const queued = this.deps.startSlot();
    const slot = queued && (await queued);
    if (queued) {
      if (!slot || this.deps.halted()) return slot?.();
      // A newer attempt (a deploy) took over while this one waited: nothing is owed a sandbox.
      if (!this.deps.current(attempt)) {
        slot();
        const message = 'superseded while waiting for its turn to start';
        return send({ type: 'CLAIM_FAILED', attempt, transient: false, message, at: now() });
      }
    }
    let sandbox: Sandbox;
    try {
      sandbox = await this.deps.runtime.claim(plan.template, this.appId);
    } catch (err) {
      slot?.();
      const transient = err instanceof RuntimeError && err.transient;
      return send({
        type: 'CLAIM_FAILED',
        attempt,
        transient,
        message: errorMessage(err),
        at: now(),
        jitter: this.deps.jitter(),
      });
    }
    this.deps.clock()?.mark('claim');
    this.hold(sandbox, version);
    if (slot) this.slots.set(sandbox.id, slot);
    // Deleted or shut down meanwhile: nothing will ever route to it.
    if (this.deps.halted()) return this.reap(sandbox.id);
    send({ type: 'CLAIMED', attempt, sandboxId: sandbox.id });
  }

  async inject(attempt: number, version: number, sandboxId: string): Promise<void> {
    try {
      await this.start(attempt, version, sandboxId);
    } finally {
      this.freeSlot(sandboxId);
    }
  }

  private async start(attempt: number, version: number, sandboxId: string): Promise<void> {
    const { send } = this.deps;
    const sandbox = this.held.get(sandboxId);
    if (!sandbox) return; // reaped: the attempt was superseded
    this.deps.clock()?.mark('handoff');
    if (this.warmth.claimedBack(sandboxId)) {
      // Its app already runs this very source: answering on the next turn keeps the order of
      // events the same as a real start's (never a send from inside the machine's own step).
      await Promise.resolve();
      return send({ type: 'HEALTHY', attempt, at: this.deps.now() });
    }
    const plan = this.plan(attempt, version);
    if (!plan.ok) {
      return send({ type: 'START_FAILED', attempt, message: plan.message, at: this.deps.now() });
    }
    // The runtime's first notes (the install began, the app was started) come synchronously: on
    // the next turn they follow the transition into Starting, as the activity's steps must.
    await Promise.resolve();
    if (!this.held.has(sandboxId)) return; // reaped meanwhile: the attempt was superseded
    const head = this.ahead.get(sandboxId);
    this.ahead.delete(sandboxId);
    try {
      if (head) {
        // Begun before this machine was: only the wait for it is this deploy's inject stage.
        await head.run();
        this.deps.clock()?.mark('inject');
        this.deps.clock()?.aside(head.timings);
      } else {
        const stages = await this.deps.runtime.inject(sandbox, plan.spec);
        this.deps.clock()?.mark('inject', stages ?? {});
      }
      this.warmth.started(sandboxId, plan.spec);
      send({ type: 'HEALTHY', attempt, at: this.deps.now() });
    } catch (err) {
      // The exit may have been heard already through onExit, and the sandbox released.
      if (err instanceof AppExitError) {
        if (this.held.has(sandboxId)) this.exited(sandboxId, err.exit);
      } else {
        const reason = err instanceof RuntimeError ? err.reason : undefined;
        send({
          type: 'START_FAILED',
          attempt,
          message: errorMessage(err),
          at: this.deps.now(),
          ...(reason ? { reason } : {}),
        });
      }
    } finally {
      head?.answered();
    }
  }

  /** Whether the sandbox's app answers; false for one this app no longer holds. */
  async health(sandboxId: string): Promise<boolean> {
    const sandbox = this.held.get(sandboxId);
    if (!sandbox) return false;
    return this.deps.runtime.health(sandbox).catch((err: unknown) => {
      this.deps.log('warn', 'health check failed', {
        app: this.appId,
        sandbox: sandboxId,
        err: errorMessage(err),
      });
      return false;
    });
  }

  /** Taken out of service by a newer version: kept warm when the keep has room, else reaped. */
  retire(sandboxId: string): void {
    const kept = this.held.has(sandboxId) && !this.deps.halted() && this.warmth.park(sandboxId);
    if (!kept) this.reap(sandboxId);
  }

  /** A rollback is on its way: the sandboxes it may take back are health-checked now. */
  probeAhead(serving: string | null): void {
    this.warmth.probeAhead(serving);
  }

  /** Reaps the retired sandboxes kept for this app. */
  dropRetired(): void {
    this.warmth.drop();
  }

  /** Stops the sandbox in the background; `settle` waits for it. Unknown ids are a no-op. */
  reap(sandboxId: string): void {
    const sandbox = this.held.get(sandboxId);
    if (!sandbox) return; // restored ids died with the old process; others are reaped already
    this.held.delete(sandboxId);
    this.versions.delete(sandboxId);
    this.ahead.delete(sandboxId);
    this.warmth.forget(sandboxId);
    this.freeSlot(sandboxId);
    const done: Promise<void> = Promise.resolve()
      .then(() => this.deps.beforeReap?.(sandbox))
      .then(() => this.deps.runtime.reap(sandbox))
      .catch((err: unknown) => {
        this.deps.log('warn', 'reap failed', {
          app: this.appId,
          sandbox: sandboxId,
          err: errorMessage(err),
        });
      })
      .then(() => void this.reaps.delete(done));
    this.reaps.add(done);
  }

  reapAll(): void {
    for (const id of [...this.held.keys()]) this.reap(id);
  }

  async settle(): Promise<void> {
    await Promise.all([...this.reaps]);
  }

  /**
   * Takes a sandbox running `version` into this app's hands: its lines, activity and exit, heard
   * through `events` when something else heard them first (a head start's).
   */
  hold(sandbox: Sandbox, version: number, events: SandboxEvents = sandbox): void {
    const { guard } = this.deps;
    const kept = (): boolean => this.warmth.isKept(sandbox.id);
    this.held.set(sandbox.id, sandbox);
    this.versions.set(sandbox.id, version);
    const push = (line: LogLine): void => {
      const own = { ...line, version: this.versions.get(sandbox.id) ?? version };
      this.ring.push(own);
      this.deps.heard(own);
    };
    // A kept sandbox is not the app any more: what it prints is not the app's log.
    events.onLog((line) => guard('log', () => kept() || push(line)));
    events.onActivity?.(() => guard('activity', () => kept() || this.deps.touch()));
    events.onExit((exit) =>
      guard('exit', () => {
        // Sandboxes we reaped ourselves are expected to exit; a kept one dying is no crash.
        if (kept()) this.reap(sandbox.id);
        else if (this.held.has(sandbox.id)) this.exited(sandbox.id, exit);
      }),
    );
  }

  private freeSlot(sandboxId: string): void {
    this.slots.get(sandboxId)?.();
    this.slots.delete(sandboxId);
  }

  private exited(sandboxId: string, exit: AppExit): void {
    this.warmth.forget(sandboxId);
    this.freeSlot(sandboxId);
    // The machine writes the note that says so; the last lines are the app's own, not ours.
    const lastLines = exit.lastLines.length > 0 ? exit.lastLines : this.ring.tail(20);
    const { code, signal } = exit;
    this.deps.send({ type: 'APP_EXITED', sandboxId, code, signal, lastLines, at: this.deps.now() });
  }
}
