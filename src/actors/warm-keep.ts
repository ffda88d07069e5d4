/**
 * Retired sandboxes kept warm for a while (design.md §3, spec §4 rollback): after a redeploy swaps
 * an app's sandbox out, the one that served until then keeps running, unrouted, so a rollback to
 * the version it runs takes it back instead of starting that version afresh.
 *
 * Bounded both ways: at most one per app (the version that ran just before), at most `max` across
 * all apps (the oldest goes first), each for at most `keepMs`. Shared by every app's supervisor;
 * it holds ids and reap callbacks only, the sandboxes stay with their app.
 */
export interface WarmKeepOptions {
  /** How long a retired sandbox is kept; 0 turns keeping off (retired means reaped at once). */
  keepMs: number;
  /** Retired sandboxes kept across all apps. */
  max: number;
}

interface Parked {
  appId: string;
  /** What the sandbox runs (source hash, template, entrypoint, env, egress); see `fingerprint`. */
  fingerprint: string;
  reap: () => void;
  timer: ReturnType<typeof setTimeout>;
}

export class WarmKeep {
  /** By sandbox id, oldest first (Map keeps insertion order). */
  private readonly parked = new Map<string, Parked>();

  constructor(
    private readonly opts: WarmKeepOptions = { keepMs: 0, max: 0 },
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {}

  get enabled(): boolean {
    return this.opts.keepMs > 0 && this.opts.max > 0;
  }

  /** Keeps the sandbox; false when keeping is off, and the caller reaps it itself. */
  park(appId: string, sandboxId: string, fingerprint: string, reap: () => void): boolean {
    if (!this.enabled) return false;
    for (const [id, p] of this.parked) if (p.appId === appId) this.evict(id);
    while (this.parked.size >= this.opts.max) {
      const oldest = this.parked.keys().next().value;
      if (oldest === undefined) break;
      this.evict(oldest);
    }
    const timer = setTimeout(() => this.evict(sandboxId), this.opts.keepMs);
    timer.unref?.();
    this.parked.set(sandboxId, { appId, fingerprint, reap, timer });
    return true;
  }

  /** Takes back the app's kept sandbox that runs exactly `fingerprint`, if there is one. */
  take(appId: string, fingerprint: string): string | undefined {
    for (const [id, p] of this.parked) {
      if (p.appId !== appId || p.fingerprint !== fingerprint) continue;
      this.forget(id);
      return id;
    }
    return undefined;
  }

  has(sandboxId: string): boolean {
    return this.parked.has(sandboxId);
  }

  /** Ids kept for the app (diagnostics, tests). */
  of(appId: string): string[] {
    return [...this.parked].filter(([, p]) => p.appId === appId).map(([id]) => id);
  }

  get size(): number {
    return this.parked.size;
  }

  /** Reaps every sandbox kept for the app. */
  drop(appId: string): void {
    for (const id of this.of(appId)) this.evict(id);
  }

  /** Stops keeping it without reaping it (it was reaped or died already). */
  forget(sandboxId: string): void {
    const p = this.parked.get(sandboxId);
    if (!p) return;
    clearTimeout(p.timer);
    this.parked.delete(sandboxId);
  }

  /** Server shutdown: the runtime reaps every sandbox itself; only the timers go here. */
  clear(): void {
    for (const p of this.parked.values()) clearTimeout(p.timer);
    this.parked.clear();
  }

  private evict(sandboxId: string): void {
    const p = this.parked.get(sandboxId);
    if (!p) return;
    this.forget(sandboxId);
    try {
      p.reap();
    } catch (err) {
      this.onError(err);
    }
  }
}

/**
 * What a started sandbox runs, as far as its app can tell: two versions with the same fingerprint
 * behave the same, so a kept sandbox may stand in for a new start of the other one.
 */
export function fingerprint(facts: {
  sourceHash: string;
  template: string;
  lane?: string;
  entrypoint?: string;
  env: ReadonlyArray<{ name: string; value: string }>;
  allowedHosts: readonly string[];
}): string {
  const env = facts.env.map((e) => [e.name, e.value]);
  return JSON.stringify([
    facts.sourceHash,
    facts.template,
    facts.lane ?? null,
    facts.entrypoint ?? null,
    env,
    facts.allowedHosts,
  ]);
}
