/**
 * Deploy history and rollback (spec §4 versions and rollback, design.md §6): every deploy and
 * rollback appends a version; the newest 20 are kept and the pruned ones' blobs deleted. A rollback
 * is a deploy of an older version's stored source as a new head version: history is never
 * rewritten. Ownership is checked by the caller (AppService), which also audits.
 */
import type { Readable } from 'node:stream';
import type { AppRegistry } from '../actors/registry.js';
import { AppError, notFound } from '../errors.js';
import type { AppRecord, Store, VersionRecord } from '../persistence/store.js';
import { mintSourceKey } from '../sources/keys.js';
import type { SourceStore } from '../sources/source-store.js';

/** Versions kept per app (design.md §6); older ones and their blobs are pruned. */
export const HISTORY_CAP = 20;

/** The spec's Version entry (§2). */
export interface VersionView {
  version: number;
  timestamp: string;
  template: string;
  lane: string;
  source_hash: string;
  rolled_back_from?: number;
}

export interface HistoryDeps {
  store: Store;
  sourceStore: SourceStore;
  registry: AppRegistry;
  deployWaitMs?: number;
  log?: (level: 'info' | 'warn' | 'error', msg: string, extra?: object) => void;
}

export interface RollbackOutcome {
  app: AppRecord;
  version: number;
  sourceHash: string;
}

export class HistoryService {
  constructor(private readonly deps: HistoryDeps) {}

  /** Newest first: the first is what runs now (or is on its way). */
  versions(appId: string): VersionView[] {
    return this.deps.store.listVersions(appId).map(versionView);
  }

  /** Redeploys version `target`'s source as a new version; waits up to the budget for Ready. */
  async rollback(app: AppRecord, target: number): Promise<RollbackOutcome> {
    const { store, sourceStore } = this.deps;
    const from = store.getVersion(app.id, target);
    if (!from) throw unknownVersion(`app ${app.id} has no version ${target}`);
    const source = await readAll(sourceStore.open(from.sourceKey));
    if (!source) throw unknownVersion(`the source of version ${target} of ${app.id} is gone`);
    const version = nextVersion(store, app.id);
    // A copy under a key of its own: pruning the old version later must not take this one's source.
    const sourceKey = mintSourceKey(app.id, version);
    await sourceStore.put(sourceKey, source);
    try {
      this.storeRollback(app.id, from, version, sourceKey);
    } catch (err) {
      await this.removeBlob(sourceKey, app.id);
      throw err;
    }
    await this.prune(app.id);
    const deployed = await this.deps.registry.deploy(app.id, version, {
      waitMs: this.deps.deployWaitMs,
    });
    return { app: deployed, version, sourceHash: from.sourceHash };
  }

  /** Keeps the newest HISTORY_CAP versions; the blobs of the others are removed best-effort. */
  async prune(appId: string): Promise<void> {
    const pruned = this.deps.store.pruneVersions(appId, HISTORY_CAP);
    for (const version of pruned) await this.removeBlob(version.sourceKey, appId);
  }

  private storeRollback(
    appId: string,
    from: VersionRecord,
    version: number,
    sourceKey: string,
  ): void {
    const { store } = this.deps;
    const now = new Date().toISOString();
    store.transaction(() => {
      // Read again inside the transaction: the app may have been deleted meanwhile.
      const app = store.getApp(appId);
      if (!app) throw notFound('app');
      store.putApp({
        ...app,
        phase: 'Pending',
        reason: 'Queued',
        message: `version ${version} queued (rollback to version ${from.version})`,
        lane: from.lane,
        template: from.template,
        entrypoint: from.entrypoint,
        lastDeployedAt: now,
      });
      store.addVersion({
        appId,
        version,
        timestamp: now,
        template: from.template,
        lane: from.lane,
        entrypoint: from.entrypoint,
        sourceHash: from.sourceHash,
        sourceKey,
        rolledBackFrom: from.version,
      });
    });
  }

  private async removeBlob(key: string, appId: string): Promise<void> {
    await this.deps.sourceStore.remove(key).catch((err: unknown) => {
      this.deps.log?.('warn', 'could not remove a source blob', { app: appId, key, err });
    });
  }
}

export function versionView(v: VersionRecord): VersionView {
  const view: VersionView = {
    version: v.version,
    timestamp: v.timestamp,
    template: v.template,
    lane: v.lane,
    source_hash: v.sourceHash,
  };
  if (v.rolledBackFrom !== undefined) view.rolled_back_from = v.rolledBackFrom;
  return view;
}

export function nextVersion(store: Store, appId: string): number {
  return (store.listVersions(appId)[0]?.version ?? 0) + 1;
}

const unknownVersion = (message: string): AppError => new AppError(400, 'unknown_version', message);

async function readAll(stream: Readable | undefined): Promise<Buffer | undefined> {
  if (!stream) return undefined;
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}
