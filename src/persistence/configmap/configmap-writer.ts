import type { CoreV1Api, V1ConfigMap } from '@kubernetes/client-node';
import { spread } from '../../backoff.js';
import { storageUnavailable } from '../storage-faults.js';
import { configMapName, configMapOf, type ObjectKey } from './configmap-objects.js';
import { timeoutOptions } from '../../cluster/request-options.js';
import { KubeStoreFault, statusOf, unavailable } from './kube-fault.js';
import type { Log } from '../../logging.js';

export interface ConfigMapWriterOptions {
  api: CoreV1Api;
  namespace: string;
  /** The ConfigMap data the mirror holds for `key` at the moment of the write; undefined: gone. */
  dataOf(key: ObjectKey): Record<string, string> | undefined;
  /** Puts the object another replica created first into the mirror, in place of ours. */
  adopt(key: ObjectKey, cm: V1ConfigMap): void;
  log: Log;
  /** A call that has not answered by then is aborted and counts as failed. */
  requestTimeoutMs?: number;
  /** Backoff of a failing object's retries: from min, doubling to max. */
  minDelayMs?: number;
  maxDelayMs?: number;
}

interface Waiter {
  /** key → the change that must have landed. */
  need: Map<ObjectKey, number>;
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * Writes the mirror's changed objects to their ConfigMaps, in order per object and a few objects
 * at a time. A write always sends the object's latest state, so changes made while one is in
 * flight coalesce into the next. Optimistic concurrency: a create, or a replace carrying the
 * resourceVersion we last saw; on a conflict the current object is read and ours is put over it
 * (the mirror is the truth for the changes this replica made). A failing API marks the writer
 * down (the store refuses new changes) and the object is retried with backoff until it lands.
 */
export class ConfigMapWriter {
  /** key → sequence number of its newest change that has not landed. */
  private readonly dirty = new Map<ObjectKey, number>();
  /** key → the newest change that landed while a newer one was made. */
  private readonly landedSeq = new Map<ObjectKey, number>();
  /** key → the resourceVersion of the object as we last wrote or saw it. */
  private readonly versions = new Map<ObjectKey, string>();
  private readonly busy = new Set<ObjectKey>();
  /** Objects made by an insert-if-absent: when another replica created one first, it wins. */
  private readonly creates = new Set<ObjectKey>();
  private readonly backoff = new Map<ObjectKey, { delayMs: number; timer?: NodeJS.Timeout }>();
  private waiters: Waiter[] = [];
  private seq = 0;
  private fault: KubeStoreFault | undefined;
  private scheduled = false;
  private closed = false;

  constructor(private readonly opts: ConfigMapWriterOptions) {}

  /** Why writes fail now; undefined while they land. */
  get down(): KubeStoreFault | undefined {
    return this.fault;
  }

  /** The objects changed: write them (after the current turn, so a burst coalesces). */
  mark(keys: Iterable<ObjectKey>): void {
    for (const key of keys) this.dirty.set(key, ++this.seq);
    if (this.scheduled || this.closed) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  /**
   * `key` was just made by an insert-if-absent (a user nobody had): if the API already holds one
   * (another replica made it meanwhile), that one is kept and replaces ours in the mirror, as a
   * unique insert into one database would have found it. Call right after the write's `mark`.
   */
  createOnly(key: ObjectKey): void {
    this.creates.add(key);
  }

  /** True while a change of `key` has not landed: what the API holds is older than the mirror. */
  pending(key: ObjectKey): boolean {
    return this.dirty.has(key);
  }

  resourceVersion(key: ObjectKey): string | undefined {
    return this.versions.get(key);
  }

  /** The object as the API holds it (listed or watched); `undefined`: it is gone. */
  saw(key: ObjectKey, resourceVersion: string | undefined): void {
    if (resourceVersion === undefined) this.versions.delete(key);
    else this.versions.set(key, resourceVersion);
  }

  /** Every object the API held when we last looked. */
  knownKeys(): ObjectKey[] {
    return [...this.versions.keys()];
  }

  /** Resolves when every change made so far has landed; rejects (503) while the API fails. */
  flush(): Promise<void> {
    if (this.dirty.size === 0) return Promise.resolve();
    if (this.closed) return Promise.reject(closedError());
    if (this.fault) return Promise.reject(storageUnavailable('database', this.fault));
    const need = new Map(this.dirty);
    return new Promise((resolve, reject) => this.waiters.push({ need, resolve, reject }));
  }

  /** Stops writing; returns the objects whose changes never landed. */
  close(): ObjectKey[] {
    this.closed = true;
    for (const { timer } of this.backoff.values()) clearTimeout(timer);
    this.backoff.clear();
    const lost = [...this.dirty.keys()];
    for (const w of this.waiters.splice(0)) w.reject(closedError());
    return lost;
  }

  private pump(): void {
    if (this.closed) return;
    for (const key of this.dirty.keys()) {
      if (this.busy.size >= CONCURRENCY) return;
      if (this.busy.has(key) || this.backoff.get(key)?.timer !== undefined) continue;
      void this.write(key);
    }
  }

  private async write(key: ObjectKey): Promise<void> {
    this.busy.add(key);
    const seq = this.dirty.get(key) ?? 0;
    try {
      await this.land(key);
      if (this.closed) return;
      this.backoff.delete(key);
      if (this.dirty.get(key) === seq) {
        this.dirty.delete(key);
        this.landedSeq.delete(key);
      } else {
        this.landedSeq.set(key, seq);
      }
      this.recovered();
      this.settle();
    } catch (err) {
      if (!this.closed) this.failed(key, unavailable(err));
    } finally {
      this.busy.delete(key);
      this.pump();
    }
  }

  /** Puts the mirror's state of `key` into the API, resolving conflicts; throws when it cannot. */
  private async land(key: ObjectKey): Promise<void> {
    const { api, namespace } = this.opts;
    const name = configMapName(key);
    const timed = timeoutOptions(this.opts.requestTimeoutMs ?? 15_000);
    for (let attempt = 1; ; attempt++) {
      const data = this.opts.dataOf(key);
      if (data === undefined) {
        await api.deleteNamespacedConfigMap({ name, namespace }, timed).catch(notFoundIsDone);
        this.versions.delete(key);
        return;
      }
      const rv = this.versions.get(key);
      const body = configMapOf(key, namespace, data, rv);
      try {
        const stored =
          rv === undefined
            ? await api.createNamespacedConfigMap({ namespace, body }, timed)
            : await api.replaceNamespacedConfigMap({ name, namespace, body }, timed);
        this.saw(key, stored.metadata?.resourceVersion);
        this.creates.delete(key);
        return;
      } catch (err) {
        // 409: created or changed by someone else; 404 on a replace: deleted by someone else.
        const status = statusOf(err);
        const lostRace = status === 409 || (status === 404 && rv !== undefined);
        if (!lostRace || attempt >= MAX_CONFLICTS) throw err;
      }
      const current = await api
        .readNamespacedConfigMap({ name, namespace }, timed)
        .catch((err: unknown): V1ConfigMap | undefined => {
          if (statusOf(err) === 404) return undefined;
          throw err;
        });
      this.saw(key, current?.metadata?.resourceVersion);
      if (current !== undefined && rv === undefined && this.creates.delete(key)) {
        this.opts.adopt(key, current);
        this.opts.log('info', 'configmap store: created by another replica first; keeping theirs', {
          configMap: name,
        });
        return;
      }
      this.opts.log('info', 'configmap store: changed elsewhere meanwhile; writing ours over it', {
        configMap: name,
        attempt,
      });
      await sleep(Math.min(25 * 2 ** attempt, 1_000));
    }
  }

  private failed(key: ObjectKey, fault: KubeStoreFault): void {
    if (this.fault === undefined) {
      this.opts.log('warn', 'configmap store cannot write; refusing changes until it can', {
        reason: fault.reason,
      });
    }
    this.fault = fault;
    for (const w of this.waiters.splice(0)) w.reject(storageUnavailable('database', fault));
    const min = this.opts.minDelayMs ?? 100;
    const last = this.backoff.get(key)?.delayMs;
    const delayMs = last === undefined ? min : Math.min(last * 2, this.opts.maxDelayMs ?? 5_000);
    const entry: { delayMs: number; timer?: NodeJS.Timeout } = { delayMs };
    entry.timer = setTimeout(
      () => {
        entry.timer = undefined;
        this.pump();
      },
      spread(delayMs, Math.random()),
    );
    entry.timer.unref();
    this.backoff.set(key, entry);
  }

  /** A write landed: if the API was failing, it takes writes again; retry the others now. */
  private recovered(): void {
    if (this.fault === undefined) return;
    this.fault = undefined;
    this.opts.log('info', 'configmap store writes again', { waiting: this.dirty.size });
    for (const entry of this.backoff.values()) {
      clearTimeout(entry.timer);
      entry.timer = undefined;
    }
  }

  private settle(): void {
    const landed = (key: ObjectKey, seq: number): boolean =>
      !this.dirty.has(key) || (this.landedSeq.get(key) ?? 0) >= seq;
    this.waiters = this.waiters.filter((w) => {
      for (const [key, seq] of w.need) if (!landed(key, seq)) return true;
      w.resolve();
      return false;
    });
  }
}

/** Objects written at once; each object is written by one call at a time. */
const CONCURRENCY = 8;
/** Conflicts in a row on one object before it counts as a failed write (and is retried later). */
const MAX_CONFLICTS = 10;

const closedError = (): Error => new Error('configmap store closed with writes pending');

function notFoundIsDone(err: unknown): void {
  if (statusOf(err) !== 404) throw err;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
