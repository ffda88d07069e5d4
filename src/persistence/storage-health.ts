import type { AppError } from '../errors.js';
import { isStorageFault, storageUnavailable, type StorageName } from './storage-faults.js';
import type { Store } from './store.js';
import type { Log } from '../logging.js';

/** A write that proves a store can take one now; throws when it cannot. */
export type WriteProbe = () => void;

/**
 * The database's probe: a real write, so a full or read-only disk refuses it, but one that waits
 * for no fsync: it runs before every audited action, and the action's own commits sync it.
 */
export function databaseProbe(store: Store): WriteProbe {
  return () => store.unsynced(() => store.setMeta('write_probe', new Date().toISOString()));
}

export interface StorageHealthOptions {
  probes: Record<StorageName, WriteProbe>;
  /** How often a store that failed is probed again; and how long a passing probe is trusted. */
  probeEveryMs?: number;
  log?: Log;
  now?: () => number;
}

interface State {
  ok: boolean;
  /** Why it is down: the 503 every refused change gets meanwhile. */
  error?: AppError;
  /** When the store was last probed (a real write may have been small enough to fit). */
  checkedAt: number;
}

/**
 * Whether the database and the source store can write. A storage fault in any write marks its
 * store down; from then on new changes are refused (503 storage_unavailable) and the store is
 * probed every second until a write goes through again, when `onRecovered` listeners (the writes
 * waiting to be retried) are told at once. `/readyz` reads the same state.
 */
export class StorageHealth {
  private readonly state = new Map<StorageName, State>();
  private readonly listeners = new Set<() => void>();
  private readonly probeEveryMs: number;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: StorageHealthOptions) {
    this.probeEveryMs = opts.probeEveryMs ?? 1_000;
    this.now = opts.now ?? (() => Date.now());
    for (const name of STORES) this.state.set(name, { ok: true, checkedAt: -Infinity });
  }

  /** A write to `store` failed: returns the error to throw (storage faults become a 503). */
  failed(store: StorageName, err: unknown): unknown {
    return isStorageFault(err) ? this.down(store, storageUnavailable(store, err)) : err;
  }

  /** A write to `store` went through. */
  succeeded(store: StorageName): void {
    const state = this.stateOf(store);
    if (state.ok) return;
    state.ok = true;
    state.error = undefined;
    this.opts.log?.('info', `${store} writes again`);
    if (this.allOk()) this.recovered();
  }

  /** Refuses a new change while a store it needs (by default, any) is known not to write. */
  assertWritable(stores: readonly StorageName[] = STORES): void {
    for (const name of stores) {
      const { error } = this.stateOf(name);
      if (error) throw error;
    }
  }

  /**
   * Before an action that must be audited: the database takes a write now (a real one, so an
   * action is not done when its audit event could not be), and the other `stores` it needs are
   * not known to be down; else 503.
   */
  verify(stores: readonly StorageName[] = ['database']): void {
    this.assertWritable(stores);
    this.probe('database');
    this.assertWritable(['database']);
  }

  /** For `/readyz`: can `store` write? Probed when the last proof is older than the interval. */
  check(store: StorageName): { ok: boolean; detail?: string } {
    const state = this.stateOf(store);
    if (state.ok && this.now() - state.checkedAt >= this.probeEveryMs) this.probe(store);
    return state.ok ? { ok: true } : { ok: false, detail: state.error?.message };
  }

  /** Calls `fn` each time every store writes again after a fault; returns the unsubscribe. */
  onRecovered(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.listeners.clear();
  }

  private probe(store: StorageName): void {
    this.stateOf(store).checkedAt = this.now();
    try {
      this.opts.probes[store]();
      this.succeeded(store);
    } catch (err) {
      // Whatever the probe hit, the store did not write: it is down until a probe passes.
      this.down(store, storageUnavailable(store, isStorageFault(err) ? err : undefined));
    }
  }

  private down(store: StorageName, error: AppError): AppError {
    const state = this.stateOf(store);
    if (state.ok) {
      this.opts.log?.('warn', `${store} cannot write; refusing changes until it can`, {
        reason: error.message,
      });
    }
    Object.assign(state, { ok: false, error });
    this.schedule();
    return error;
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      for (const name of STORES) if (!this.stateOf(name).ok) this.probe(name);
    }, this.probeEveryMs);
    this.timer.unref();
  }

  private recovered(): void {
    for (const fn of [...this.listeners]) {
      try {
        fn();
      } catch (err) {
        this.opts.log?.('warn', 'a storage recovery listener failed', { err: String(err) });
      }
    }
  }

  private allOk(): boolean {
    return STORES.every((name) => this.stateOf(name).ok);
  }

  private stateOf(store: StorageName): State {
    return this.state.get(store) as State;
  }
}

const STORES: readonly StorageName[] = ['database', 'source store'];
