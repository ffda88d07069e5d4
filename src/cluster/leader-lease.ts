import {
  CoordinationV1Api,
  V1MicroTime,
  type KubeConfig,
  type V1Lease,
} from '@kubernetes/client-node';
import { statusOf, timeoutOptions } from './request-options.js';
import type { Log } from '../logging.js';

/** On the Lease while a replica leads: where the others forward what only the leader does. */
export const LEADER_URL_ANNOTATION = 'slipway.dev/leader-url';

export interface LeaderLeaseOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  /** The Lease's name: one per installation (`runtime.kubernetes.instance`). */
  name: string;
  /** This replica, unique among the replicas (and across its own restarts). */
  identity: string;
  /** Where the other replicas reach this one's listener. */
  url: string;
  leaseMs: number;
  renewMs: number;
  log: Log;
}

/** Who leads, as this replica last saw the Lease. */
export interface LeaderView {
  leading: boolean;
  identity: string;
  /** The holder's identity; undefined while nobody holds the Lease. */
  holder?: string;
  /** The holder's listener (LEADER_URL_ANNOTATION). */
  leaderUrl?: string;
}

/**
 * Leader election on a `coordination.k8s.io/v1` Lease, as client-go's leaderelection does it:
 * a replica takes the Lease when nobody holds it or the holder has not renewed it for its
 * duration, judged by this replica's own clock since it last saw the Lease change (clocks of two
 * nodes never compared); every write carries the resourceVersion read, so two replicas taking it
 * at once cannot both win. The leader renews every `renewMs`; one whose renewals have not landed
 * for `leaseMs - renewMs` after they were sent gives up (`onLost`) before any other replica could
 * see the Lease expire. `release()` (a clean stop) hands it over at once.
 */
export class LeaderLease {
  private readonly api: CoordinationV1Api;
  private view: LeaderView;
  /** The Lease's resourceVersion as last seen, and when (this replica's clock). */
  private observed: { version: string; at: number } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private deadline: NodeJS.Timeout | undefined;
  private stopped = false;
  private ticking: Promise<void> = Promise.resolve();
  /** The Lease as this replica last wrote it, while it leads. */
  private mine: V1Lease | undefined;
  private readonly acquiredListeners: (() => void)[] = [];
  private readonly lostListeners: ((why: string) => void)[] = [];

  constructor(private readonly opts: LeaderLeaseOptions) {
    if (opts.renewMs >= opts.leaseMs) {
      throw new RangeError('leader election: the renew interval must be shorter than the lease');
    }
    this.api = opts.kubeConfig.makeApiClient(CoordinationV1Api);
    this.view = { leading: false, identity: opts.identity };
  }

  /**
   * Each API call's limit: half the time a leader has left to renew, so one slow answer on a
   * loaded API server (or node) still leaves time for another try.
   */
  private get callMs(): number {
    return Math.max(this.opts.renewMs, (this.opts.leaseMs - this.opts.renewMs) / 2);
  }

  get leading(): boolean {
    return this.view.leading;
  }

  status(): LeaderView {
    return { ...this.view };
  }

  /** Once, when this replica first takes the Lease. */
  onAcquired(listener: () => void): void {
    this.acquiredListeners.push(listener);
  }

  /** Once, when this replica led and may no longer: it must stop acting as the leader now. */
  onLost(listener: (why: string) => void): void {
    this.lostListeners.push(listener);
  }

  start(): void {
    this.schedule(0);
  }

  /** Stops trying; a leader gives the Lease up (holder cleared), so another takes it at once. */
  async release(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.ticking;
    clearTimeout(this.deadline);
    if (!this.view.leading) return;
    this.view = { leading: false, identity: this.opts.identity };
    const lease = await this.read().catch(() => undefined);
    if (lease?.spec?.holderIdentity !== this.opts.identity) return;
    const body: V1Lease = {
      ...lease,
      spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1 },
    };
    await this.api.replaceNamespacedLease(this.target(body), timeoutOptions(this.callMs)).then(
      () => this.opts.log('info', 'leader election: released the lease'),
      (err: unknown) =>
        this.opts.log('warn', 'leader election: could not release the lease', {
          error: errorText(err),
        }),
    );
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.ticking = this.tick().finally(() => this.schedule(this.opts.renewMs));
    }, ms);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const sent = Date.now();
    try {
      // A leader renews over the Lease it last wrote (one call; a conflict means it is not
      // the one it wrote any more, and the next tick reads it); the others read it first.
      const lease = this.view.leading && this.mine ? this.mine : await this.read();
      if (this.stopped) return;
      if (!lease) {
        await this.write(undefined, sent);
        return;
      }
      // Judged from when the answer came: a renewal it shows may have landed just before.
      if (this.heldByAnother(lease, Date.now())) {
        this.follow(lease);
        return;
      }
      await this.write(lease, sent);
    } catch (err) {
      // A conflict is another replica's write landing first: read again next time.
      this.mine = undefined;
      if (statusOf(err) === 409) return;
      this.opts.log(this.view.leading ? 'warn' : 'info', 'leader election: lease call failed', {
        error: errorText(err),
      });
    }
  }

  private heldByAnother(lease: V1Lease, now: number): boolean {
    const version = lease.metadata?.resourceVersion ?? '';
    if (this.observed?.version !== version) this.observed = { version, at: now };
    const holder = lease.spec?.holderIdentity ?? '';
    if (holder === '' || holder === this.opts.identity) return false;
    const durationMs = (lease.spec?.leaseDurationSeconds ?? this.opts.leaseMs / 1000) * 1000;
    return this.observed.at + durationMs > now;
  }

  /** Another replica holds the Lease: note who, and stop leading if this one did. */
  private follow(lease: V1Lease): void {
    const holder = lease.spec?.holderIdentity ?? undefined;
    const leaderUrl = lease.metadata?.annotations?.[LEADER_URL_ANNOTATION];
    if (this.view.leading) this.lose(`the lease is held by ${holder ?? 'another replica'}`);
    this.view = {
      leading: false,
      identity: this.opts.identity,
      ...(holder ? { holder } : {}),
      ...(leaderUrl ? { leaderUrl } : {}),
    };
  }

  /** Takes or renews the Lease (creates it when missing); `sent`: when this attempt began. */
  private async write(lease: V1Lease | undefined, sent: number): Promise<void> {
    const renewing = lease?.spec?.holderIdentity === this.opts.identity && this.view.leading;
    const now = new V1MicroTime(sent);
    const spec = {
      holderIdentity: this.opts.identity,
      leaseDurationSeconds: Math.ceil(this.opts.leaseMs / 1000),
      acquireTime: renewing ? lease?.spec?.acquireTime : now,
      renewTime: now,
      leaseTransitions: (lease?.spec?.leaseTransitions ?? 0) + (renewing ? 0 : 1),
    };
    const metadata = {
      ...lease?.metadata,
      name: this.opts.name,
      namespace: this.opts.namespace,
      annotations: { ...lease?.metadata?.annotations, [LEADER_URL_ANNOTATION]: this.opts.url },
    };
    const body: V1Lease = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata, spec };
    const options = timeoutOptions(this.callMs);
    const written = lease
      ? await this.api.replaceNamespacedLease(this.target(body), options)
      : await this.api.createNamespacedLease({ namespace: this.opts.namespace, body }, options);
    this.observed = { version: written.metadata?.resourceVersion ?? '', at: Date.now() };
    this.mine = written;
    if (this.stopped && !renewing) return;
    this.renewed(sent);
    if (renewing) return;
    this.view = {
      leading: true,
      identity: this.opts.identity,
      holder: this.opts.identity,
      leaderUrl: this.opts.url,
    };
    this.opts.log('info', 'leader election: this replica leads', { lease: this.opts.name });
    for (const listener of this.acquiredListeners.splice(0)) listener();
  }

  /** A renewal sent at `sent` landed: this replica leads until `leaseMs - renewMs` after it. */
  private renewed(sent: number): void {
    clearTimeout(this.deadline);
    const left = sent + this.opts.leaseMs - this.opts.renewMs - Date.now();
    this.deadline = setTimeout(() => this.lose('the lease could not be renewed in time'), left);
    this.deadline.unref();
  }

  private lose(why: string): void {
    if (!this.view.leading) return;
    // A replica that lost the Lease does not compete again: its process ends (start.ts).
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.deadline);
    this.view = { leading: false, identity: this.opts.identity };
    this.opts.log('error', 'leader election: this replica no longer leads', { why });
    for (const listener of this.lostListeners.splice(0)) listener(why);
  }

  private async read(): Promise<V1Lease | undefined> {
    try {
      return await this.api.readNamespacedLease(
        { name: this.opts.name, namespace: this.opts.namespace },
        timeoutOptions(this.callMs),
      );
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
  }

  private target(body: V1Lease) {
    return { name: this.opts.name, namespace: this.opts.namespace, body };
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
