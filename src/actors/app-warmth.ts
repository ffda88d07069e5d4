import type { InjectSpec, Runtime, Sandbox } from '../runtime/runtime.js';
import type { Log } from '../logging.js';
import { errorMessage } from './types.js';
import { fingerprint, type WarmKeep } from './warm-keep.js';

export interface WarmthDeps {
  runtime: Runtime;
  now: () => number;
  keep: WarmKeep;
  log: Log;
  /** The app's sandbox by id, while the app holds it. */
  held: (id: string) => Sandbox | undefined;
  reap: (id: string) => void;
}

/**
 * A health check begun ahead of a take (`probeAhead`) stands in for the take's own only this
 * soon after it began: an older one was begun for a rollback that never got to its take.
 */
const PROBE_FRESH_MS = 1_000;

/**
 * One app's side of keeping retired sandboxes warm (see WarmKeep): what each started sandbox
 * runs, parking the one a newer version retires, and taking it back for a version that runs
 * exactly the same (a rollback to the previous version), whose start is then a no-op.
 */
export class AppWarmth {
  /** Sandbox id → what it runs (see `fingerprint`). */
  private readonly running = new Map<string, string>();
  /** Taken back from the keep: already running their version, their inject is a no-op. */
  private readonly reused = new Set<string>();
  /** Health checks begun ahead of a take, by sandbox id. */
  private readonly probes = new Map<string, { at: number; healthy: Promise<boolean> }>();

  constructor(
    private readonly appId: string,
    private readonly deps: WarmthDeps,
  ) {}

  /** The sandbox answers, running what `spec` says. */
  started(sandboxId: string, spec: InjectSpec): void {
    const runs = this.fingerprintOf(spec);
    if (runs !== undefined) this.running.set(sandboxId, runs);
  }

  /** It is gone (reaped, exited): nothing about it is kept. */
  forget(sandboxId: string): void {
    this.running.delete(sandboxId);
    this.reused.delete(sandboxId);
    this.probes.delete(sandboxId);
    this.deps.keep.forget(sandboxId);
  }

  /** Kept warm: not the app any more, so its lines are not the app's and its death no crash. */
  isKept(sandboxId: string): boolean {
    return this.deps.keep.has(sandboxId);
  }

  /** Keeps a retired sandbox when it is known to run healthy and the keep has room. */
  park(sandboxId: string): boolean {
    const runs = this.running.get(sandboxId);
    return (
      runs !== undefined &&
      this.deps.keep.park(this.appId, sandboxId, runs, () => this.deps.reap(sandboxId))
    );
  }

  /** Reaps the app's kept sandboxes. */
  drop(): void {
    this.deps.keep.drop(this.appId);
  }

  /** True once for a sandbox `take` gave back: its start is already done. */
  claimedBack(sandboxId: string): boolean {
    return this.reused.delete(sandboxId);
  }

  /** The app's kept sandbox that runs exactly what `spec` says, if it still answers. */
  async take(spec: InjectSpec): Promise<Sandbox | undefined> {
    const { keep } = this.deps;
    const runs = keep.enabled ? this.fingerprintOf(spec) : undefined;
    const id = runs === undefined ? undefined : keep.take(this.appId, runs);
    const sandbox = id === undefined ? undefined : this.deps.held(id);
    if (!sandbox) return undefined;
    const ahead = this.probes.get(sandbox.id);
    this.probes.delete(sandbox.id);
    const fresh = ahead !== undefined && this.deps.now() - ahead.at <= PROBE_FRESH_MS;
    const healthy = await (fresh ? ahead.healthy : this.check(sandbox));
    if (!healthy || !this.deps.held(sandbox.id)) {
      this.deps.reap(sandbox.id);
      return undefined;
    }
    this.reused.add(sandbox.id);
    return sandbox;
  }

  /**
   * A rollback is on its way: every sandbox this app started but `serving` (the release kept for
   * the stability window, the one kept warm) is health-checked now, while the rollback's rows are
   * written and its machine steps, so that the take finds the answer there or on its way.
   */
  probeAhead(serving: string | null): void {
    if (!this.deps.keep.enabled) return;
    const at = this.deps.now();
    for (const id of this.running.keys()) {
      const sandbox = id === serving ? undefined : this.deps.held(id);
      if (sandbox) this.probes.set(id, { at, healthy: this.check(sandbox) });
    }
  }

  private check(sandbox: Sandbox): Promise<boolean> {
    return this.deps.runtime.health(sandbox).catch((err: unknown) => {
      this.deps.log('warn', 'health check of a kept sandbox failed', {
        app: this.appId,
        sandbox: sandbox.id,
        err: errorMessage(err),
      });
      return false;
    });
  }

  /** The spec is the version's start plan (start-plan.ts), source hash included. */
  private fingerprintOf(spec: InjectSpec): string | undefined {
    const { sourceHash } = spec;
    return sourceHash === undefined ? undefined : fingerprint({ ...spec, sourceHash });
  }
}
