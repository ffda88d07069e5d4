/**
 * The registry: one root actor per app, in a Map (design.md §2-3). HTTP and MCP commands reach an
 * app only through its actor's mailbox, so two deploys of one name never interleave, and one app's
 * failure never touches another.
 */
import { setMaxListeners } from 'node:events';
import {
  DEFAULT_POLICY,
  type AppInput,
  type AppPolicy,
  type AppState,
  type Initiator,
} from '../machines/app-machine.js';
import { releaseOf } from '../persistence/release.js';
import { WriteRetry } from '../persistence/write-retry.js';
import type { AppRecord, VersionRecord } from '../persistence/store.js';
import type { AdoptedSandbox, Sandbox, Upload } from '../runtime/runtime.js';
import type { Activity } from './app-activity.js';
import { AppEventBus, lifecycleEvent } from './app-events.js';
import { inputFor, restore, stateOf, type AppSnapshot } from './app-snapshot.js';
import { AppLogs } from './app-logs.js';
import type { Log } from '../logging.js';
import type { AppLogLine, LogFollower } from './log-ring.js';
import { RecentUse } from './recent-use.js';
import { StartGate } from './start-gate.js';
import { AppSupervisor, writeKeys } from './supervisor.js';
import {
  consoleLog,
  errorMessage,
  type AppEvent,
  type AppEventListener,
  type RegistryDeps,
  type WaitOptions,
} from './types.js';
import { WarmKeep } from './warm-keep.js';
import { HeadStarts } from './head-starts.js';
import { planRelease } from './start-plan.js';
import { StageClock } from '../stage-clock.js';

export type { AppEvent, AppEventListener, RegistryDeps, WaitOptions } from './types.js';

/** Where a deploy, resume or wake stops waiting: the app got somewhere it will stay. */
const SETTLED: ReadonlySet<AppState> = new Set(['Ready', 'Failed', 'Suspended', 'Deleted']);
/** Phases of a deploy on its way: one in them may be cancelled. */
const IN_FLIGHT: ReadonlySet<AppState> = new Set(['Pending', 'Claiming', 'Starting']);

export class AppRegistry {
  private readonly apps = new Map<string, AppSupervisor>();
  /** Apps whose delete has begun (and so been announced) while their sandboxes are reaped. */
  private readonly goingAway = new Set<string>();
  private readonly logLines: AppLogs;
  private readonly keep: WarmKeep;
  private readonly headStarts: HeadStarts;
  private readonly bus: AppEventBus;
  private readonly now: () => number;
  private readonly log: Log;
  private readonly policy: AppPolicy;
  private readonly waitMs: number;
  private readonly writes: WriteRetry;
  private readonly recent: RecentUse;
  /** The cold starts a restart owes, a few at a time, most recently used apps first. */
  private readonly gate: StartGate;
  /** Aborted once the server drains: deploys and resumes stop waiting for their app. */
  private readonly callers = new AbortController();
  /** Until start() has rehydrated the apps: the router holds their requests meanwhile. */
  private starting: Promise<void> | undefined;
  private startDone: () => void = () => undefined;
  private releaseRoute: (appId: string, sandbox: Sandbox) => Promise<void> = async () => undefined;
  private settleRoute: (appId: string) => Promise<void> = async () => undefined;

  constructor(private readonly deps: RegistryDeps) {
    // Every deploy, rollback or resume in flight listens on it: their number is not a leak.
    setMaxListeners(0, this.callers.signal);
    this.now = deps.now ?? (() => Date.now());
    this.log = deps.log ?? consoleLog;
    this.bus = new AppEventBus(this.log);
    this.policy = { ...DEFAULT_POLICY, ...deps.policy };
    this.waitMs = deps.deployWaitMs ?? 10_000;
    this.logLines = new AppLogs(this.log);
    this.writes = deps.writes ?? new WriteRetry({ log: this.log });
    this.recent = new RecentUse(deps.store, this.log, deps.lastUseFlushMs ?? 30_000);
    this.gate = new StartGate(deps.restoreConcurrency ?? 4, (id) => this.recent.of(id));
    this.keep = new WarmKeep(deps.keepRetired, (err) =>
      this.log('error', 'reaping a kept sandbox failed', { err: errorMessage(err) }),
    );
    this.headStarts = new HeadStarts({ runtime: deps.runtime, log: this.log });
  }

  /**
   * Rehydrates every stored app: Ready and in-flight apps come back serving (on the sandbox the
   * last process left running, when the runtime adopted one); others stay put. The adopted
   * sandboxes no app takes back are reaped. With `runtimeStarted`, the apps come back once it
   * resolves (the runtime's adoption is done); requests for them are held meanwhile.
   */
  async start(runtimeStarted?: Promise<void>): Promise<void> {
    this.holdRoutesUntilStarted();
    try {
      await runtimeStarted;
      this.rehydrateAll();
    } finally {
      this.startDone();
      this.starting = undefined;
    }
  }

  /**
   * A data path that routes visitors to sandboxes without the router (direct-routes.ts): a
   * sandbox stops only once `release` resolves (its route moved elsewhere first), and a deploy or
   * resume is answered once `settle` resolves (its route names what serves now).
   */
  routeWith(routes: {
    release: (appId: string, sandbox: Sandbox) => Promise<void>;
    settle: (appId: string) => Promise<void>;
  }): void {
    this.releaseRoute = routes.release;
    this.settleRoute = routes.settle;
  }

  /**
   * From now until start() is done, route() holds a request for an app it has no actor for yet
   * (the server listens before its apps are back, and a visitor must not see them missing).
   */
  holdRoutesUntilStarted(): void {
    this.starting ??= new Promise((resolve) => (this.startDone = resolve));
  }

  private rehydrateAll(): void {
    const adopted = new Map<string, AdoptedSandbox[]>();
    for (const a of this.deps.runtime.adopted?.() ?? []) {
      adopted.set(a.appId, [...(adopted.get(a.appId) ?? []), a]);
    }
    // The most recently used first: the cold starts they owe reach the gate in that order.
    const rows = this.deps.store.listApps({}).items;
    rows.sort((a, b) => this.recent.of(b.id) - this.recent.of(a.id));
    for (const row of rows) {
      if (this.apps.has(row.id)) continue; // already running (start called twice)
      const left = adopted.get(row.id) ?? [];
      adopted.delete(row.id);
      try {
        this.rehydrate(row, left);
      } catch (err) {
        this.log('error', 'could not restore app', { app: row.id, err: errorMessage(err) });
        this.reapAdopted(left);
      }
    }
    // Apps deleted while no server ran (or never stored): nothing owns these.
    this.reapAdopted([...adopted.values()].flat());
  }

  /** Stops every actor without touching rows or phases: the next start picks them up. */
  async stop(): Promise<void> {
    const all = [...this.apps.values()];
    this.apps.clear();
    this.gate.close();
    this.recent.stop();
    this.keep.clear();
    this.headStarts.stop();
    this.logLines.closeAll({ code: 'not_ready', message: 'the server is shutting down' });
    for (const app of all) app.stop();
    await Promise.all(all.map((app) => app.settle()));
    // A shared retrier belongs to whoever made it; ours gets its last try here.
    if (this.deps.writes) this.writes.flush();
    else this.writes.stop();
  }

  /** Deploys a stored version; resolves when Ready or Failed, or at `waitMs` with the record then. */
  async deploy(appId: string, version: number, opts: WaitOptions = {}): Promise<AppRecord> {
    const row = this.requireRow(appId);
    const input = this.inputOf(row, version);
    let app = this.live(appId);
    if (app) {
      app.timeWith(opts.clock);
      app.send({ type: 'DEPLOY', version, ttlMs: input.ttlMs }, 'user');
    } else {
      // The machine's first effect waits a turn (`prepare`): the clock is in place before it.
      app = this.spawn(row, input, undefined, 'user');
      app.timeWith(opts.clock);
    }
    const mine = app.snapshot().context.deploys;
    await app.waitFor(
      (s) => s.context.deploys !== mine || SETTLED.has(stateOf(s)),
      opts.waitMs ?? this.waitMs,
      this.callers.signal,
    );
    opts.clock?.mark('ready');
    await this.settleRoute(appId);
    opts.clock?.mark('route');
    return this.rowOf(app);
  }

  /**
   * Waits on for a deploy of `version` (or, without one, a resume) that outlasted the first wait:
   * until the app settles or another deploy comes, `waitMs` passes or `cut` aborts.
   */
  async awaitSettled(
    appId: string,
    version: number | undefined,
    opts: { waitMs: number; cut?: AbortSignal },
  ): Promise<AppRecord | undefined> {
    const app = this.live(appId);
    if (!app) return this.deps.store.getApp(appId);
    const cut = opts.cut ? AbortSignal.any([opts.cut, this.callers.signal]) : this.callers.signal;
    await app.waitFor(
      (s) =>
        SETTLED.has(stateOf(s)) ||
        (version !== undefined && s.context.lastDeploy?.version !== version),
      opts.waitMs,
      cut,
    );
    await this.settleRoute(appId);
    return this.deps.store.getApp(appId) && this.rowOf(app);
  }

  /**
   * Cancels the deploy (or rollback) in flight, of `version` when one is named: its candidate is
   * dropped and recorded `Cancelled`; what serves goes on serving. Undefined: nothing to cancel.
   */
  cancel(appId: string, version?: number): AppRecord | undefined {
    const app = this.live(appId);
    if (!app) return undefined;
    const { context } = app.snapshot();
    const last = context.lastDeploy;
    const inFlight =
      IN_FLIGHT.has(stateOf(app.snapshot())) &&
      last?.outcome === 'Pending' &&
      last.version === context.version &&
      (version === undefined || version === last.version);
    if (!inFlight) return undefined;
    app.send({ type: 'CANCEL', at: this.now() }, 'user');
    return this.rowOf(app);
  }

  /**
   * Resolves once an event of the app says its phase or its activity's step is no longer
   * `seen`'s, or `waitMs` passes, or `cut` aborts: a long poll.
   */
  awaitChange(
    appId: string,
    seen: { phase: string; step?: string },
    opts: { waitMs: number; cut?: AbortSignal },
  ): Promise<boolean> {
    const differs = (phase: string, step: string | undefined) =>
      phase !== seen.phase || step !== seen.step;
    if (differs(this.phase(appId) ?? 'Deleted', this.activity(appId)?.step)) {
      return Promise.resolve(true);
    }
    if (opts.cut?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const finish = (changed: boolean): void => {
        off();
        clearTimeout(timer);
        opts.cut?.removeEventListener('abort', cut);
        resolve(changed);
      };
      const cut = () => finish(false);
      const off = this.bus.on((event) => {
        if (event.app_id === appId && differs(event.phase, event.activity?.step)) finish(true);
      });
      const timer = setTimeout(() => finish(false), opts.waitMs);
      opts.cut?.addEventListener('abort', cut, { once: true });
    });
  }

  /**
   * The server drains: every deploy and resume waiting for its app is answered now with where
   * the app is (stored, so committed: the next start takes it up), and later ones do not wait,
   * so that no client is cut off from the answer to a change that was made.
   */
  stopWaiting(): void {
    this.callers.abort();
  }

  async suspend(appId: string): Promise<AppRecord> {
    const app = this.live(appId);
    app?.send({ type: 'SUSPEND' }, 'user');
    return app ? this.rowOf(app) : this.requireRow(appId);
  }

  async resume(appId: string, opts: WaitOptions = {}): Promise<AppRecord> {
    const app = this.live(appId);
    if (!app) return this.requireRow(appId);
    app.timeWith(opts.clock);
    app.send({ type: 'RESUME' }, 'user');
    await app.waitFor(
      (s) => SETTLED.has(stateOf(s)),
      opts.waitMs ?? this.waitMs,
      this.callers.signal,
    );
    opts.clock?.mark('ready');
    await this.settleRoute(appId);
    opts.clock?.mark('route');
    return this.rowOf(app);
  }

  /** Reaps everything, removes the rows, then the source blobs best-effort. */
  async delete(appId: string): Promise<void> {
    const app = this.apps.get(appId);
    this.apps.delete(appId);
    this.goingAway.add(appId);
    this.headStarts.drop(appId);
    let versions: VersionRecord[];
    try {
      if (app?.alive) app.send({ type: 'DELETE' }, 'user');
      else this.announceDelete(appId);
      await app?.settle();
      // A row write still waiting must not land on a new app of the same name.
      this.writes.drop(writeKeys.of(appId));
      this.logLines.remove(appId, { code: 'not_found', message: 'the app was deleted' });
      this.recent.forget(appId);
      versions = this.deps.store.deleteApp(appId);
    } finally {
      this.goingAway.delete(appId);
    }
    this.deps.runtime.forget?.(appId);
    // Rollbacks point at the blob of the version they restored: each blob goes once.
    await Promise.all(
      [...new Set(versions.map((v) => v.sourceKey))].map((key) =>
        this.deps.sourceStore.remove(key).catch((err: unknown) => {
          const extra = { app: appId, key, err: errorMessage(err) };
          this.log('warn', 'could not remove a source blob', extra);
        }),
      ),
    );
  }

  /**
   * The sandbox serving the app, for the router: wakes a Suspended app and waits until Ready.
   * `instead`: a sandbox the app just failed to answer on; another one is waited for.
   */
  async route(
    appId: string,
    opts: WaitOptions & { instead?: Sandbox } = {},
  ): Promise<Sandbox | undefined> {
    const waitMs = opts.waitMs ?? this.waitMs;
    // Still starting up: the app's actor may be on its way back, with the sandbox it runs.
    if (this.starting && !this.apps.has(appId)) await waitOrTimeout(this.starting, waitMs);
    const app = this.live(appId);
    if (!app) return undefined;
    const avoid = opts.instead?.id ?? null;
    const serving = app.routable();
    if (serving && serving.id !== avoid) return serving;
    // A visitor waits for it: its cold start goes before those nobody asked for yet.
    this.recent.mark(appId, this.now());
    this.gate.promote(appId);
    const state = stateOf(app.snapshot());
    if (state === 'Failed') return undefined;
    let clock: StageClock | undefined;
    if (state === 'Suspended') {
      clock = new StageClock();
      app.timeWith(clock);
      app.send({ type: 'WAKE' }, 'system');
    }
    const s = await app.waitFor(
      (s) => (s.context.serving === null ? SETTLED.has(stateOf(s)) : s.context.serving !== avoid),
      waitMs,
    );
    if (clock) {
      clock.mark('ready');
      // A visitor's wake has no API answer to carry its stages: the log line does.
      this.log('info', 'app woke', { app: appId, phase: stateOf(s), stages: clock.stages() });
    }
    const next = s.status === 'active' ? app.routable() : undefined;
    return next?.id === avoid ? undefined : next;
  }

  /**
   * The apps being deleted: their `delete` event is out, their rows stay until their sandboxes are
   * reaped. Views leave them out, so a client that reads after the event never sees them again.
   */
  get deleting(): ReadonlySet<string> {
    return this.goingAway;
  }

  /** The app's phase as its actor has it (the row's for an app without one); undefined: no app. */
  phase(appId: string): AppState | undefined {
    const app = this.live(appId);
    if (app) return stateOf(app.snapshot());
    return this.deps.store.getAppSummary(appId)?.phase;
  }

  /** What the deploy, rollback or resume in flight does now; undefined when none is. */
  activity(appId: string): Activity | undefined {
    return this.live(appId)?.activityNow();
  }

  /** The apps that have an actor now. */
  ids(): string[] {
    return [...this.apps.keys()];
  }

  /** The serving sandbox now, without waking or waiting. */
  serving(appId: string): Sandbox | undefined {
    return this.live(appId)?.serving();
  }

  /**
   * A rollback of the app begins: the sandboxes it may take back (design.md §3, kept warm) are
   * health-checked while its rows are written, not after.
   */
  probeKept(appId: string): void {
    this.live(appId)?.probeAhead();
  }

  /**
   * A deploy is on its way with these rows, not yet written, and its `upload` (which the store
   * may still be writing): the sandbox of the version they make is claimed and started now, for
   * its machine's claim to take (head-starts.ts). Not for a version that cannot start, an app
   * going away, nor once the server drains.
   */
  headStart(rows: { app: AppRecord; version: VersionRecord }, upload: Upload): void {
    const appId = rows.app.id;
    if (this.callers.signal.aborted || this.goingAway.has(appId)) return;
    const plan = planRelease(this.deps.runtime, rows.app, rows.version);
    if (plan.ok) this.headStarts.begin(appId, plan.template, plan.spec, upload);
  }

  /** The deploy of `version` is answered: a head start its machine did not take is reaped. */
  dropHeadStart(appId: string, version: number): void {
    this.headStarts.drop(appId, version);
  }

  /** A request went through: pushes the idle deadline. Memory only; the machine reads it when due. */
  touch(appId: string): void {
    this.apps.get(appId)?.touch();
  }

  /**
   * The app's last lines (up to 1,000), Suspended or not, or only those of one version; empty
   * after a server restart.
   */
  logs(appId: string, version?: number): AppLogLine[] {
    const lines = this.logLines.lines(appId);
    return version === undefined ? lines : lines.filter((l) => l.version === version);
  }

  /** New log lines as they come, until unfollowed or the app goes (`end` says why). */
  followLogs(appId: string, follower: LogFollower): () => void {
    return this.logLines.follow(appId, follower);
  }

  /** Ids of the app's retired sandboxes kept warm (diagnostics, tests). */
  kept(appId: string): string[] {
    return this.keep.of(appId);
  }

  /** Lifecycle events of every app; returns the unsubscribe function. */
  on(listener: AppEventListener): () => void {
    return this.bus.on(listener);
  }

  private rehydrate(row: AppRecord, left: AdoptedSandbox[]): void {
    const head = this.deps.store.listVersions(row.id)[0];
    const latest = head?.version ?? 0;
    const input = this.inputOf(row, row.currentVersion > 0 ? row.currentVersion : latest);
    const { snapshot, problem } = restore(row, input);
    if (problem) this.log('warn', problem, { app: row.id });
    // Acknowledged but never started (the server died first): deploy it now.
    if (!snapshot) {
      this.reapAdopted(left);
      if (input.version > 0) this.spawn(row, input).queueStarts();
      return;
    }
    const app = this.spawn(row, input, snapshot);
    const live = snapshot.context.live;
    const serving = left.find((a) => a.version === live);
    this.reapAdopted(left.filter((a) => a !== serving));
    app.restore(this.now(), serving);
    // Acknowledged, but the machine's state that knew of it never reached the disk (the store
    // refused the write, then the server went down): this version is still owed a deploy.
    if (head?.outcome === 'Pending' && latest > snapshot.context.version) {
      this.log('warn', 'resuming a deploy the stored state had not recorded', {
        app: row.id,
        version: latest,
      });
      app.send({ type: 'DEPLOY', version: latest, ttlMs: this.inputOf(row, latest).ttlMs });
    }
  }

  /** Sandboxes the last process left that no app runs on: reaped in the background. */
  private reapAdopted(sandboxes: AdoptedSandbox[]): void {
    for (const { sandbox, appId } of sandboxes) {
      this.deps.runtime.reap(sandbox).catch((err: unknown) => {
        const extra = { app: appId, sandbox: sandbox.id, err: errorMessage(err) };
        this.log('warn', 'could not reap a sandbox the last process left', extra);
      });
    }
  }

  /** The machine input for a version: its release's idle ttl, which a rollback restores too. */
  private inputOf(row: AppRecord, version: number): AppInput {
    const release = this.deps.store.getVersion(row.id, version);
    const ttl = release ? releaseOf(release, row).ttl : row.ttl;
    return inputFor({ ...row, ttl }, version, this.policy);
  }

  private spawn(
    row: AppRecord,
    input: AppInput,
    snapshot?: AppSnapshot,
    initiator?: Initiator,
  ): AppSupervisor {
    const deps = {
      store: this.deps.store,
      runtime: this.deps.runtime,
      url: this.deps.appUrl(row.name),
      now: this.now,
      jitter: this.deps.jitter ?? Math.random,
      log: this.log,
      publish: (event: AppEvent) => this.bus.publish(event),
      ring: this.logLines.ringOf(row.id),
      keep: this.keep,
      headStarts: this.headStarts,
      writes: this.writes,
      recent: this.recent,
      gate: this.gate,
      beforeReap: (sandbox: Sandbox) => this.releaseRoute(row.id, sandbox),
    };
    const app = new AppSupervisor(row.id, deps, input, snapshot, initiator);
    this.apps.set(row.id, app);
    return app;
  }

  private live(appId: string): AppSupervisor | undefined {
    const app = this.apps.get(appId);
    return app?.alive ? app : undefined;
  }

  private requireRow(appId: string): AppRecord {
    const row = this.deps.store.getApp(appId);
    if (!row) throw new Error(`app ${appId} is not stored`);
    return row;
  }

  /** The app's row; while the store refuses its latest state, that state as it will be written. */
  private rowOf(app: AppSupervisor): AppRecord {
    const row =
      (app.unsaved ? app.record() : undefined) ?? this.deps.store.getApp(app.appId) ?? app.record();
    if (!row) throw new Error(`app ${app.appId} is not stored`);
    return row;
  }

  /** An app with no live actor (never started, or broken) still tells the world it is gone. */
  private announceDelete(appId: string): void {
    const row = this.deps.store.getApp(appId);
    if (!row) return;
    const facts = {
      ...row,
      appId,
      owner: row.ownerId,
      phase: 'Deleted' as const,
      version: row.currentVersion,
    };
    this.bus.publish(lifecycleEvent('delete', facts, 'user', this.now()));
  }
}

/** Resolves when `promise` does or `ms` have passed, whichever is first. */
function waitOrTimeout(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
