import PQueue from 'p-queue';
import { RuntimeError } from '../runtime.js';
import type { LocalSandbox } from './sandbox.js';
import { spread } from '../../backoff.js';
import type { Log } from '../../logging.js';

export interface WarmPoolOptions {
  templates: readonly string[];
  /** Idle sandboxes kept per template. */
  size: number;
  boot(template: string): Promise<LocalSandbox>;
  log: Log;
  /** Background boots at once: two keep a 2-core host responsive while refilling. */
  concurrency?: number;
  /** The clock of the boot-failure summaries (tests). */
  now?: () => number;
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
/**
 * After the inject come the app's route and the deploy's answer, a few ms of this thread. The
 * boot's spawn blocks it for 2-3 ms (a fork of this process), and it landed right there: most of
 * a deploy's `route` stage. So the refill starts this much after the inject.
 */
const AFTER_INJECT_MS = 20;

/** Retry delays after background boot failures: 1 s doubling to 30 s, each wait jittered. */
const RETRY_MIN_MS = 1_000;
const RETRY_MAX_MS = 30_000;

/** A failure that repeats is summarised at most this often (with its count), not logged each time. */
export const REPEAT_SUMMARY_MS = 60_000;

/**
 * The log of background boot failures, which retry forever while the host is broken: a new
 * message is a warning at once; the same message again is only counted, and written with its
 * count (`repeated`) at most once a minute; the first success after failures is one info line.
 * Before, every retry was an info line, and a broken host filled the log with one sentence.
 */
export class BootFailureLog {
  /** Per template: the message, when it was last written, and the repeats since. */
  private readonly last = new Map<string, { error: string; at: number; repeated: number }>();
  private readonly failures = new Map<string, number>();

  constructor(
    private readonly log: Log,
    private readonly now: () => number = Date.now,
  ) {}

  failed(template: string, error: string, retryMs: number): void {
    this.failures.set(template, (this.failures.get(template) ?? 0) + 1);
    const last = this.last.get(template);
    const now = this.now();
    if (last === undefined || last.error !== error) {
      if (last !== undefined && last.repeated > 0) this.summarise(template, last);
      this.last.set(template, { error, at: now, repeated: 0 });
      this.log('warn', 'warm pool: boot failed, retrying', { template, error, retryMs });
      return;
    }
    last.repeated += 1;
    if (now - last.at >= REPEAT_SUMMARY_MS) {
      this.summarise(template, last, retryMs);
      last.at = now;
      last.repeated = 0;
    }
  }

  succeeded(template: string): void {
    const failures = this.failures.get(template);
    if (failures === undefined) return;
    const last = this.last.get(template);
    this.failures.delete(template);
    this.last.delete(template);
    this.log('info', 'warm pool: boot recovered', {
      template,
      failures,
      ...(last ? { lastError: last.error } : {}),
    });
  }

  private summarise(
    template: string,
    last: { error: string; repeated: number },
    retryMs?: number,
  ): void {
    this.log('warn', 'warm pool: boot failed, retrying', {
      template,
      error: last.error,
      repeated: last.repeated,
      ...(retryMs ? { retryMs } : {}),
    });
  }
}

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
  /** Boots a claim started itself (the pool was empty): stop waits for them too. */
  private readonly claimBoots = new Set<Promise<void>>();
  private readonly failures: BootFailureLog;
  private readonly queue: PQueue;
  private stopped = false;
  /** The last background boot error, cleared by the next success. */
  lastError: string | undefined;

  constructor(private readonly opts: WarmPoolOptions) {
    this.queue = new PQueue({ concurrency: opts.concurrency ?? 2 });
    this.failures = new BootFailureLog(opts.log, opts.now);
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
    return sandbox ?? this.bootForClaim(template);
  }

  /**
   * A boot for a claim, outside the queue. If the pool stops meanwhile (a shutdown during start-up,
   * apps coming back), the sandbox is reaped here and stop() waits for that: otherwise it would
   * outlive the runtime's teardown, and its cgroup would keep the instance's from being removed.
   */
  private bootForClaim(template: string): Promise<LocalSandbox> {
    const booting = (async () => {
      const sandbox = await this.opts.boot(template);
      if (this.stopped) {
        await sandbox.reap();
        throw new RuntimeError('the local runtime is stopped', true);
      }
      return sandbox;
    })();
    const done = booting.then(
      () => undefined,
      () => undefined,
    );
    this.claimBoots.add(done);
    // A claim waits on its boot and the pool does not: no new background boot starts while a
    // claim's is on its way (after a restart, 20 apps come back before 12 spares are refilled).
    this.queue.pause();
    void done.then(() => {
      this.claimBoots.delete(done);
      if (this.claimBoots.size === 0 && !this.stopped) this.queue.start();
    });
    return booting;
  }

  /** The claimed sandbox's inject is over (either way): time to refill its template, shortly. */
  injected(template: string): void {
    if (!this.pendingRefills.has(template)) return;
    setTimeout(() => {
      if (this.pendingRefills.delete(template)) this.refill(template);
    }, AFTER_INJECT_MS).unref();
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

  /** Stops refilling, waits for boots in flight (claims' too), and reaps every idle sandbox. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.queue.clear();
    await Promise.all([this.queue.onIdle(), ...this.claimBoots]);
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
      this.failures.succeeded(template);
      this.idle.get(template)?.push(sandbox);
      void sandbox.closed.then(() => this.dropDead(template, sandbox));
    } catch (err) {
      this.lastError = err instanceof Error ? err.message : String(err);
      const delay = this.retryDelay.get(template) ?? RETRY_MIN_MS;
      this.retryDelay.set(template, Math.min(delay * 2, RETRY_MAX_MS));
      this.failures.failed(template, this.lastError, delay);
      setTimeout(() => this.refill(template), spread(delay, Math.random())).unref();
    } finally {
      this.booting.set(template, (this.booting.get(template) ?? 1) - 1);
    }
  }

  private dropDead(template: string, sandbox: LocalSandbox): void {
    const list = this.idle.get(template) ?? [];
    const index = list.indexOf(sandbox);
    if (index === -1) return; // claimed before it ended: no longer the pool's
    list.splice(index, 1);
    this.opts.log('info', 'warm pool: idle sandbox died, replacing it', {
      template,
      sandbox: sandbox.id,
    });
    this.refill(template);
  }
}
