import PQueue from 'p-queue';
import type { LocalSandbox } from './sandbox.js';

export interface WarmPoolOptions {
  templates: readonly string[];
  /** Idle sandboxes kept per template. */
  size: number;
  boot(template: string): Promise<LocalSandbox>;
  log: (msg: string, extra?: object) => void;
  /** Background boots at once: two keep a 2-core host responsive while refilling. */
  concurrency?: number;
}

export interface PoolStatus {
  idle: number;
  target: number;
  booting: number;
}

/**
 * A claim is followed at once by an inject, and a sandbox booting meanwhile (a fork of this
 * process, then ~40 ms of node start on a 2-core host) slows that inject down. So the refill waits
 * for the inject to finish (`injected()`), or this long at most.
 */
const REFILL_DELAY_MS = 250;

/** Retry delays after background boot failures: 1 s doubling to 30 s. */
const RETRY_MIN_MS = 1_000;
const RETRY_MAX_MS = 30_000;

/**
 * Keeps `size` booted, idle sandboxes per template. A claim takes one at once (or boots one when
 * the pool is empty) and the pool refills in the background through a bounded queue. An idle
 * sandbox that dies is dropped and replaced.
 */
export class WarmPool {
  private readonly idle = new Map<string, LocalSandbox[]>();
  private readonly booting = new Map<string, number>();
  private readonly retryDelay = new Map<string, number>();
  private readonly pendingRefills = new Set<string>();
  private readonly queue: PQueue;
  private stopped = false;
  /** The last background boot error, cleared by the next success. */
  lastError: string | undefined;

  constructor(private readonly opts: WarmPoolOptions) {
    this.queue = new PQueue({ concurrency: opts.concurrency ?? 2 });
    for (const t of opts.templates) {
      this.idle.set(t, []);
      this.booting.set(t, 0);
    }
  }

  start(): void {
    for (const t of this.opts.templates) this.refill(t);
  }

  async claim(template: string): Promise<LocalSandbox> {
    const list = this.idle.get(template) ?? [];
    let sandbox = list.shift();
    while (sandbox && !sandbox.alive) sandbox = list.shift();
    this.pendingRefills.add(template);
    setTimeout(() => this.injected(template), REFILL_DELAY_MS).unref();
    return sandbox ?? this.opts.boot(template);
  }

  /** The claimed sandbox's inject is over (either way): time to refill its template. */
  injected(template: string): void {
    if (!this.pendingRefills.delete(template)) return;
    this.refill(template);
  }

  status(): Record<string, PoolStatus> {
    const out: Record<string, PoolStatus> = {};
    for (const t of this.opts.templates) {
      out[t] = {
        idle: this.idle.get(t)?.length ?? 0,
        target: this.opts.size,
        booting: this.booting.get(t) ?? 0,
      };
    }
    return out;
  }

  /** Resolves when no refill is pending and no background boot is queued or running. */
  async settled(): Promise<void> {
    for (;;) {
      await this.queue.onIdle();
      if (this.pendingRefills.size === 0 || this.stopped) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Stops refilling, waits for boots in flight, and reaps every idle sandbox. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.queue.clear();
    await this.queue.onIdle();
    const all = [...this.idle.values()].flatMap((list) => list.splice(0));
    await Promise.all(all.map((s) => s.reap()));
  }

  private refill(template: string): void {
    if (this.stopped) return;
    const list = this.idle.get(template) ?? [];
    const missing = this.opts.size - list.length - (this.booting.get(template) ?? 0);
    for (let i = 0; i < missing; i += 1) {
      this.booting.set(template, (this.booting.get(template) ?? 0) + 1);
      void this.queue.add(() => this.bootIdle(template));
    }
  }

  private async bootIdle(template: string): Promise<void> {
    try {
      if (this.stopped) return;
      const sandbox = await this.opts.boot(template);
      if (this.stopped) {
        await sandbox.reap();
        return;
      }
      this.lastError = undefined;
      this.retryDelay.delete(template);
      this.idle.get(template)?.push(sandbox);
      void sandbox.closed.then(() => this.dropDead(template, sandbox));
    } catch (err) {
      this.lastError = err instanceof Error ? err.message : String(err);
      const delay = this.retryDelay.get(template) ?? RETRY_MIN_MS;
      this.retryDelay.set(template, Math.min(delay * 2, RETRY_MAX_MS));
      this.opts.log('warm pool: boot failed, retrying', {
        template,
        error: this.lastError,
        retryMs: delay,
      });
      setTimeout(() => this.refill(template), delay).unref();
    } finally {
      this.booting.set(template, (this.booting.get(template) ?? 1) - 1);
    }
  }

  private dropDead(template: string, sandbox: LocalSandbox): void {
    const list = this.idle.get(template) ?? [];
    const index = list.indexOf(sandbox);
    if (index === -1) return; // claimed before it ended: no longer the pool's
    list.splice(index, 1);
    this.opts.log('warm pool: idle sandbox died, replacing it', { template, sandbox: sandbox.id });
    this.refill(template);
  }
}
