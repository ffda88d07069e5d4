/**
 * A scripted Runtime for the actor and model tests (a fake inside the unit tests of src/actors, as
 * design.md §7 allows). In `manual` mode claims and injects wait until the test settles them, so a
 * test decides exactly when each result reaches the supervisor; otherwise they follow `script`.
 */
import { PassThrough, type Duplex } from 'node:stream';
import {
  AppExitError,
  type AdoptedSandbox,
  RuntimeError,
  type AppExit,
  type InjectSpec,
  type LogLine,
  type Runtime,
  type RuntimeStatus,
  type Sandbox,
} from '../../src/runtime/runtime.js';

export class FakeSandbox implements Sandbox {
  /** The version its inject started (an app runs in it from then on). */
  version: number | undefined;
  exited = false;
  reaped = false;
  private readonly exitListeners: Array<(exit: AppExit) => void> = [];
  private readonly logListeners: Array<(line: LogLine) => void> = [];

  constructor(
    readonly id: string,
    readonly template: string,
    readonly appId: string,
  ) {}

  connect(): Duplex {
    return new PassThrough();
  }
  onExit(listener: (exit: AppExit) => void): void {
    this.exitListeners.push(listener);
  }
  onLog(listener: (line: LogLine) => void): void {
    this.logListeners.push(listener);
  }

  get live(): boolean {
    return !this.exited && !this.reaped;
  }

  print(text: string): void {
    for (const l of this.logListeners)
      l({ time: new Date().toISOString(), stream: 'stdout', text });
  }

  /** The app process ends; listeners hear it once, like the real runtime promises. */
  exit(code: number | null, lastLines: string[] = [], signal: string | null = null): void {
    if (this.exited) return;
    this.exited = true;
    for (const l of this.exitListeners) l({ code, signal, lastLines });
  }
}

interface Deferred<T> {
  resolve: (value: T) => void;
  reject: (err: Error) => void;
}

export interface PendingClaim extends Deferred<Sandbox> {
  template: string;
  appId: string;
}
export interface PendingInject extends Deferred<void> {
  sandbox: FakeSandbox;
  spec: InjectSpec;
}

/** What an automatic claim or inject does; consumed in order, then `ok`. */
export type ClaimStep = 'ok' | RuntimeError | Error;
export type InjectStep = 'ok' | AppExit | Error;

export class FakeRuntime implements Runtime {
  readonly backend = 'local' as const;
  templates: string[] = ['static', 'node', 'python'];
  manual = false;
  readonly claimScript: ClaimStep[] = [];
  readonly injectScript: InjectStep[] = [];
  readonly claims: PendingClaim[] = [];
  readonly injects: PendingInject[] = [];
  readonly sandboxes: FakeSandbox[] = [];
  readonly injected: InjectSpec[] = [];
  reapCalls = 0;
  /** Sandboxes that run but whose app no longer answers a health check. */
  readonly failingHealth = new Set<FakeSandbox>();
  /** Apps whose claims throw a non-RuntimeError, to prove one app's failure stays its own. */
  readonly broken = new Set<string>();
  /** `template:lane` pairs this runtime refuses, with the message it gives. */
  readonly unavailableLanes = new Map<string, string>();
  private seq = 0;
  /** What the last restart left running, for adopted(). */
  private left: FakeSandbox[] = [];

  async start(): Promise<void> {}
  async stop(): Promise<void> {
    for (const s of this.sandboxes) s.reaped = true;
  }

  claim(template: string, appId: string): Promise<Sandbox> {
    if (this.broken.has(appId)) return Promise.reject(new TypeError(`runtime bug for ${appId}`));
    return new Promise<Sandbox>((resolve, reject) => {
      const pending: PendingClaim = { template, appId, resolve, reject };
      if (this.manual) return void this.claims.push(pending);
      const step = this.claimScript.shift() ?? 'ok';
      if (step === 'ok') resolve(this.boot(template, appId));
      else reject(step);
    });
  }

  inject(sandbox: Sandbox, spec: InjectSpec): Promise<void> {
    const fake = sandbox as FakeSandbox;
    this.injected.push(spec);
    return new Promise<void>((resolve, reject) => {
      const pending: PendingInject = { sandbox: fake, spec, resolve, reject };
      if (this.manual) return void this.injects.push(pending);
      const step = this.injectScript.shift() ?? 'ok';
      if (step === 'ok') {
        fake.version = spec.version;
        resolve();
      } else if (step instanceof Error) reject(step);
      else reject(this.crash(fake, step));
    });
  }

  async health(sandbox: Sandbox): Promise<boolean> {
    const fake = sandbox as FakeSandbox;
    return fake.live && !this.failingHealth.has(fake);
  }

  async reap(sandbox: Sandbox): Promise<void> {
    const fake = sandbox as FakeSandbox;
    this.reapCalls += 1;
    if (fake.reaped) return;
    fake.reaped = true;
    // A killed sandbox exits and takes its pending start with it, as a real one would.
    fake.exit(null, [], 'SIGKILL');
    for (const p of this.injects.filter((i) => i.sandbox === fake)) {
      this.injects.splice(this.injects.indexOf(p), 1);
      p.reject(new RuntimeError('sandbox reaped', false));
    }
  }

  versions(): Record<string, string> {
    return { node: '20.0.0' };
  }

  laneUnavailable(template: string, lane: string): string | undefined {
    return this.unavailableLanes.get(`${template}:${lane}`);
  }

  status(): RuntimeStatus {
    const claimed = this.sandboxes.filter((s) => s.live).length;
    return {
      ok: true,
      backend: 'fake',
      pools: {},
      claimed,
      limits: { enforced: false, detail: 'fake' },
    };
  }

  /** Sandboxes of the app neither exited nor reaped. */
  live(appId?: string): FakeSandbox[] {
    return this.sandboxes.filter((s) => s.live && (appId === undefined || s.appId === appId));
  }

  /** Settles a waiting claim: the newest is the current attempt's, the oldest a superseded one's. */
  settleClaim(which: 'newest' | 'oldest', outcome: 'ok' | RuntimeError): FakeSandbox | undefined {
    const pending = which === 'newest' ? this.claims.pop() : this.claims.shift();
    if (!pending) throw new Error('no claim is waiting');
    if (outcome !== 'ok') return void pending.reject(outcome);
    const sandbox = this.boot(pending.template, pending.appId);
    pending.resolve(sandbox);
    return sandbox;
  }

  settleInject(outcome: InjectStep): void {
    const pending = this.injects.pop();
    if (!pending) throw new Error('no inject is waiting');
    if (outcome === 'ok') {
      pending.sandbox.version = pending.spec.version;
      pending.resolve();
    } else if (outcome instanceof Error) pending.reject(outcome);
    else pending.reject(this.crash(pending.sandbox, outcome));
  }

  /**
   * The control plane died: its unanswered requests die with it, silently, and so do its
   * sandboxes, unless `keep` (restart continuity): then those running an app outlive it and the
   * next start adopts them.
   */
  restart(keep = false): void {
    this.left = [];
    for (const s of this.sandboxes.filter((s) => s.live)) {
      if (keep && s.version !== undefined) this.left.push(s);
      else s.reaped = true;
    }
    this.claims.length = 0;
    this.injects.length = 0;
  }

  adopted(): AdoptedSandbox[] {
    const left = this.left;
    this.left = [];
    return left.map((sandbox) => ({
      sandbox,
      appId: sandbox.appId,
      version: sandbox.version as number,
    }));
  }

  private boot(template: string, appId: string): FakeSandbox {
    const sandbox = new FakeSandbox(`sb-${++this.seq}`, template, appId);
    this.sandboxes.push(sandbox);
    return sandbox;
  }

  private crash(sandbox: FakeSandbox, exit: AppExit): AppExitError {
    sandbox.exit(exit.code, exit.lastLines, exit.signal);
    return new AppExitError(exit);
  }
}
