import { errorMessage } from '../actors/types.js';
import type { Store } from '../persistence/store.js';
import type { SourceStore } from '../sources/source-store.js';
import type { Log } from './compose.js';

/**
 * A deploy writes its blob before its rows, so a blob no version points to is either an upload in
 * flight or garbage: a crash between the two, or a delete whose best-effort removal failed. Past
 * this age no upload is still in flight (a deploy commits its rows right after the write).
 */
export const ORPHAN_GRACE_MS = 10 * 60_000;
export const ORPHAN_SWEEP_INTERVAL_MS = 10 * 60_000;

export interface SweepDeps {
  store: Store;
  sourceStore: SourceStore;
  log: Log;
  /** Blobs younger than this are kept whatever the store says. */
  graceMs?: number;
  now?: () => number;
}

export interface SweepResult {
  removed: string[];
  bytes: number;
}

/** Removes the blobs no stored version points to, once they are older than the grace. */
export async function sweepOrphanBlobs(deps: SweepDeps): Promise<SweepResult> {
  const { store, sourceStore, log } = deps;
  const graceMs = deps.graceMs ?? ORPHAN_GRACE_MS;
  const cutoff = (deps.now ?? Date.now)() - graceMs;
  const blobs = await sourceStore.list();
  const referenced = store.sourceKeys();
  const result: SweepResult = { removed: [], bytes: 0 };
  for (const blob of blobs) {
    if (referenced.has(blob.key) || blob.modifiedAt > cutoff) continue;
    // A deploy or rollback may have committed its rows since the bulk read: look once more.
    if (store.hasSourceKey(blob.key)) continue;
    await sourceStore.remove(blob.key);
    result.removed.push(blob.key);
    result.bytes += blob.bytes;
  }
  if (result.removed.length > 0) {
    log('info', 'removed orphan source blobs', {
      count: result.removed.length,
      bytes: result.bytes,
    });
  }
  return result;
}

/**
 * Sweeps at start and then every `intervalMs`, on an unref'd timer so it never holds the process
 * open. One sweep at a time: a call while one runs shares it. A failed sweep is logged, never
 * thrown; the next one tries again.
 */
export class OrphanBlobSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<SweepResult | undefined> | undefined;

  constructor(private readonly deps: SweepDeps & { intervalMs?: number }) {}

  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(
      () => void this.sweep(),
      this.deps.intervalMs ?? ORPHAN_SWEEP_INTERVAL_MS,
    );
    this.timer.unref();
    void this.sweep();
  }

  /** Stops the timer and waits for a sweep under way, so nothing touches the store after. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** Runs one sweep now (or joins the one running); undefined when it failed. */
  sweep(): Promise<SweepResult | undefined> {
    this.running ??= sweepOrphanBlobs(this.deps)
      .catch((err: unknown) => {
        this.deps.log('warn', 'orphan source blob sweep failed', { err: errorMessage(err) });
        return undefined;
      })
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }
}
