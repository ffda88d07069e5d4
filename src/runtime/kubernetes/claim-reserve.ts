import type { Log } from '../../logging.js';
import type { PodSandbox } from './pod-sandbox.js';

export interface ReserveOptions {
  /** Claims held ahead per template (`runtime.kubernetes.claimAhead`). */
  size: number;
  templates: readonly string[];
  /** One claim bound to a Ready pod, enrolled and followed (bindClaim with no app yet). */
  bind(template: string): Promise<PodSandbox>;
  /** Lets a held pod go: its claim is deleted. */
  release(pod: PodSandbox): Promise<void>;
  log: Log;
}

const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 30_000;

/**
 * Claims made ahead of deploys: bound to a Ready pod of the warm pool, enrolled and followed
 * while nobody waits, so a deploy starts on a pod that is already its own instead of waiting for
 * the controller to bind a claim (about 45 ms on the test cluster). Each one taken is replaced at
 * once; a held pod that goes away is let go and replaced; a claim that fails is tried again with
 * a growing delay.
 */
export class ClaimReserve {
  private readonly held = new Map<string, PodSandbox[]>();
  private readonly binding = new Map<string, number>();
  private readonly retryMs = new Map<string, number>();
  private readonly retries = new Set<NodeJS.Timeout>();
  private readonly inFlight = new Set<Promise<void>>();
  private running = false;

  constructor(private readonly opts: ReserveOptions) {}

  start(): void {
    this.running = true;
    for (const template of this.opts.templates) this.fill(template);
  }

  /** A held pod of `template`, no longer held; undefined when none is. */
  take(template: string): PodSandbox | undefined {
    const pod = this.held.get(template)?.shift();
    if (pod) this.fill(template);
    return pod;
  }

  /** How many pods of `template` are held now. */
  count(template: string): number {
    return this.held.get(template)?.length ?? 0;
  }

  /** Makes no more claims and lets every held pod go. */
  async stop(): Promise<void> {
    this.running = false;
    for (const timer of this.retries) clearTimeout(timer);
    this.retries.clear();
    // Emptied, not only dropped: an exit of one of them later finds it held no more.
    const pods = [...this.held.values()].flatMap((list) => list.splice(0));
    this.held.clear();
    await Promise.all(pods.map((pod) => this.opts.release(pod)));
  }

  /** Resolves once the claims in flight at stop() are settled (each let go, or failed). */
  async drained(): Promise<void> {
    await Promise.all([...this.inFlight]);
  }

  private fill(template: string): void {
    if (!this.running) return;
    const have = this.count(template) + (this.binding.get(template) ?? 0);
    for (let i = have; i < this.opts.size; i += 1) this.bindOne(template);
  }

  private bindOne(template: string): void {
    this.binding.set(template, (this.binding.get(template) ?? 0) + 1);
    const run = this.opts
      .bind(template)
      .then(
        (pod) => this.hold(template, pod),
        (err: unknown) => this.failed(template, err),
      )
      .finally(() => {
        this.binding.set(template, (this.binding.get(template) ?? 1) - 1);
        this.inFlight.delete(run);
      });
    this.inFlight.add(run);
  }

  private async hold(template: string, pod: PodSandbox): Promise<void> {
    if (!this.running) return this.opts.release(pod);
    this.retryMs.delete(template);
    const pods = this.held.get(template) ?? [];
    this.held.set(template, pods);
    pods.push(pod);
    // The pod went away while held (evicted, its agent died): it is replaced.
    pod.onExit(() => {
      const at = pods.indexOf(pod);
      if (at === -1) return;
      pods.splice(at, 1);
      this.opts.log('info', 'a claim held ahead lost its pod; replacing it', { claim: pod.id });
      void this.opts.release(pod);
      this.fill(template);
    });
  }

  private failed(template: string, err: unknown): void {
    if (!this.running) return;
    const delay = Math.min(RETRY_MAX_MS, (this.retryMs.get(template) ?? RETRY_FIRST_MS / 2) * 2);
    this.retryMs.set(template, delay);
    this.opts.log('info', 'cannot claim a sandbox ahead; trying again', {
      template,
      retryMs: delay,
      error: err instanceof Error ? err.message : String(err),
    });
    const timer = setTimeout(() => {
      this.retries.delete(timer);
      this.fill(template);
    }, delay);
    timer.unref();
    this.retries.add(timer);
  }
}
