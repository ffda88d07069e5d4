import { errorMessage } from '../actors/types.js';
import type { Store } from '../persistence/store.js';
import type { SourceStore } from '../sources/source-store.js';
import type { BlobQuarantine } from './blob-quarantine.js';
import type { Log } from '../logging.js';

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
  /** Where swept blobs go, kept for a while, rather than being deleted outright. */
  quarantine: BlobQuarantine;
  /** Blobs younger than this are kept whatever the store says. */
  graceMs?: number;
  now?: () => number;
}

export interface SweepResult {
  removed: string[];
  bytes: number;
  /** Set when the sweep took nothing because the store looked reset: why. */
  refused?: string;
}

/**
 * Moves the blobs no stored version points to, once they are older than the grace, into the
 * quarantine; and deletes what the quarantine kept past its retention. Takes nothing on the word
 * of a store that looks reset (see `looksReset`): that is logged at error, for an operator.
 */
export async function sweepOrphanBlobs(deps: SweepDeps): Promise<SweepResult> {
  const { store, sourceStore, log, quarantine } = deps;
  const graceMs = deps.graceMs ?? ORPHAN_GRACE_MS;
  const cutoff = (deps.now ?? Date.now)() - graceMs;
  const expired = await quarantine.expire();
  if (expired.length > 0) {
    log('info', 'deleted quarantined source blobs past their retention', { count: expired.length });
  }
  const blobs = await sourceStore.list();
  const referenced = store.sourceKeys();
  const unreferenced = blobs.filter((blob) => !referenced.has(blob.key));
  const candidates = unreferenced.filter((blob) => blob.modifiedAt <= cutoff);
  // Only uploads in flight (young blobs): nothing to take, and nothing to judge the store by.
  if (candidates.length === 0) return { removed: [], bytes: 0 };
  const refused = looksReset(blobs.length, unreferenced.length, referenced.size);
  if (refused !== undefined) {
    log('error', `orphan source blob sweep refused: ${refused}`, {
      blobs: blobs.length,
      unreferenced: unreferenced.length,
      versions: referenced.size,
    });
    return { removed: [], bytes: 0, refused };
  }
  const result: SweepResult = { removed: [], bytes: 0 };
  for (const blob of candidates) {
    // A deploy or rollback may have committed its rows since the bulk read: look once more.
    if (store.hasSourceKey(blob.key)) continue;
    const data = await sourceStore.open(blob.key);
    if (data === undefined) continue;
    await quarantine.keep(blob.key, data);
    await sourceStore.remove(blob.key);
    result.removed.push(blob.key);
    result.bytes += blob.bytes;
  }
  if (result.removed.length > 0) {
    log('info', 'moved orphan source blobs to the quarantine', {
      count: result.removed.length,
      bytes: result.bytes,
      dir: quarantine.dir,
    });
  }
  return result;
}

/**
 * Why the store's answer cannot be trusted, or undefined: a store with no version at all while
 * blobs exist, or one that points to fewer than half of them, is far likelier a database that was
 * reset or restored from an old backup than that many orphans.
 */
function looksReset(blobs: number, unreferenced: number, versions: number): string | undefined {
  if (versions === 0) {
    return `the database holds no version at all while the source store holds ${blobs} blob(s): was it reset or replaced? Restore it from a backup`;
  }
  if (unreferenced * 2 > blobs) {
    return `${unreferenced} of ${blobs} blobs are unreferenced (more than half): was the database restored from an old backup? Check it, then remove the orphans by hand`;
  }
  return undefined;
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
