/**
 * Deploy history and rollback (spec §4 versions and rollback, design.md §6): every deploy and
 * rollback appends a version; the newest 20 are kept and the pruned ones' blobs deleted. A rollback
 * is a deploy of an older version's stored source as a new head version, pointing at that
 * version's blob: history is never rewritten. Ownership is checked by the caller (AppService),
 * which also audits.
 */
import type { AppRegistry } from '../actors/registry.js';
import type { CommitGate } from '../commit-gate.js';
import { AppError, notFound } from '../errors.js';
import { releaseOf, type Release } from '../persistence/release.js';
import type { StorageHealth } from '../persistence/storage-health.js';
import type { AppRecord, Outcome, Store, VersionRecord } from '../persistence/store.js';
import { envNames } from './app-view.js';
import type { SourceStore } from '../sources/source-store.js';
import type { Log } from '../logging.js';
import type { StageClock } from '../stage-clock.js';
import type { Lane } from '../sources/templates.js';

/** Versions kept per app (design.md §6); older ones and their blobs are pruned. */
export const HISTORY_CAP = 20;

/** The spec's Version entry (§2), with the release it is: metadata (env names only) and outcome. */
export interface VersionView {
  version: number;
  timestamp: string;
  template: string;
  lane: Lane;
  source_hash: string;
  rolled_back_from?: number;
  runtime: { template: string; lane: Lane; entrypoint?: string; build?: string };
  env: { name: string }[];
  egress: { allowed_hosts: string[] };
  ttl: string;
  /** Absent on versions deployed before outcomes were recorded. */
  outcome?: Outcome;
  reason?: string;
  message?: string;
  /** True on the version that serves now (the app's live_version). */
  live: boolean;
  /** The user ID that deployed (or rolled back to, or reconfigured) it; absent on older rows. */
  deployed_by?: string;
}

export interface HistoryDeps {
  store: Store;
  sourceStore: SourceStore;
  registry: AppRegistry;
  /** A release's rows land through it: refused once the server drains past its cut. */
  commits: CommitGate;
  /** Turns the source store's faults (a full disk, an object store down) into 503s. */
  storage?: StorageHealth;
  deployWaitMs?: number;
  log?: Log;
}

export interface RollbackOutcome {
  app: AppRecord;
  version: number;
  sourceHash: string;
}

/** What a release made from a stored version's source runs with, and how it is told. */
interface ReleaseHow {
  /** The release's settings, given the app's row as stored inside the transaction. */
  settings: (app: AppRecord) => Release;
  rolledBackFrom?: number;
  note: string;
  /** The user ID the new version is recorded as deployed by. */
  by: string;
  /** Times the release's stages for the answer's Server-Timing header. */
  clock?: StageClock;
}

export class HistoryService {
  constructor(private readonly deps: HistoryDeps) {}

  /** Newest first; `live` marks the one that serves, which a failed deploy leaves in place. */
  versions(appId: string): VersionView[] {
    const { store } = this.deps;
    const app = store.getApp(appId);
    if (!app) return [];
    return store.listVersions(appId).map((v) => versionView(v, app));
  }

  /** Redeploys version `target`'s source as a new version; waits up to the budget for Ready. */
  async rollback(
    app: AppRecord,
    target: number,
    by: string,
    clock?: StageClock,
  ): Promise<RollbackOutcome> {
    const from = this.deps.store.getVersion(app.id, target);
    if (!from) throw unknownVersion(`app ${app.id} has no version ${target}`);
    this.deps.registry.probeKept(app.id);
    return this.release(app.id, from, {
      // The whole release comes back, env and egress included.
      settings: (current) => releaseOf(from, current),
      rolledBackFrom: from.version,
      note: `rollback to version ${from.version}`,
      by,
      clock,
    });
  }

  /**
   * A config release: `from`'s source as a new version with the settings `change` makes of its
   * release. Blue/green as any deploy; waits up to the budget for Ready.
   */
  async reconfigure(
    app: AppRecord,
    from: VersionRecord,
    change: (release: Release) => Release,
    by: string,
  ): Promise<RollbackOutcome> {
    return this.release(app.id, from, {
      settings: (current) => change(releaseOf(from, current)),
      note: `settings of version ${from.version} changed`,
      by,
    });
  }

  private async release(appId: string, from: VersionRecord, how: ReleaseHow) {
    const version = nextVersion(this.deps.store, appId);
    // The new version runs `from`'s very source, so it points at the same blob: nothing is
    // copied, and prune and delete remove a blob only once no version points at it.
    const stored = await this.sourceCall(() => this.deps.sourceStore.size(from.sourceKey));
    if (stored === undefined) throw sourceGone(appId, from.version);
    how.clock?.mark('blob');
    this.storeRelease(appId, from, version, how);
    how.clock?.mark('rows');
    await this.prune(appId);
    how.clock?.mark('prune');
    const deployed = await this.deps.registry.deploy(appId, version, {
      waitMs: this.deps.deployWaitMs,
      clock: how.clock,
    });
    return { app: deployed, version, sourceHash: from.sourceHash };
  }

  /**
   * Keeps the newest HISTORY_CAP versions; the blobs of the others are removed best-effort, each
   * once no kept version (a rollback to it) points at it any more.
   */
  async prune(appId: string): Promise<void> {
    const { store } = this.deps;
    const pruned = store.pruneVersions(appId, HISTORY_CAP);
    for (const key of new Set(pruned.map((v) => v.sourceKey))) {
      if (!store.hasSourceKey(key)) await this.removeBlob(key, appId);
    }
  }

  private storeRelease(appId: string, from: VersionRecord, version: number, how: ReleaseHow): void {
    const { store } = this.deps;
    const now = new Date().toISOString();
    // Unsynced, as a deploy's rows (app-service.ts): the release's audit event syncs them.
    this.deps.commits.commit(() =>
      store.unsynced(() =>
        store.transaction(() => {
          // Read again inside the transaction: the app may have been deleted meanwhile.
          const app = store.getApp(appId);
          if (!app) throw notFound('app');
          // Pruned meanwhile: its blob may be on its way out, and no row may point at it again.
          if (!store.getVersion(appId, from.version)) throw sourceGone(appId, from.version);
          const release = how.settings(app);
          store.putApp({
            ...app,
            ...release,
            phase: 'Pending',
            reason: 'Queued',
            message: `version ${version} queued (${how.note})`,
            lastDeployedAt: now,
          });
          store.addVersion({
            ...release,
            appId,
            version,
            timestamp: now,
            sourceHash: from.sourceHash,
            sourceKey: from.sourceKey,
            // What the release asked for stays asked for: a later redeploy asks for it again.
            ...(from.overrides ? { overrides: from.overrides } : {}),
            ...(how.rolledBackFrom === undefined ? {} : { rolledBackFrom: how.rolledBackFrom }),
            deployedBy: how.by,
            outcome: 'Pending',
          });
        }),
      ),
    );
  }

  private async sourceCall<T>(call: () => Promise<T>): Promise<T> {
    const { storage } = this.deps;
    try {
      const result = await call();
      storage?.succeeded('source store');
      return result;
    } catch (err) {
      throw storage ? storage.failed('source store', err) : err;
    }
  }

  /** Removes a source blob best-effort: a failure is logged, never thrown. */
  async removeBlob(key: string, appId: string): Promise<void> {
    await this.deps.sourceStore.remove(key).catch((err: unknown) => {
      this.deps.log?.('warn', 'could not remove a source blob', { app: appId, key, err });
    });
  }
}

/** Versions that never kept their metadata show their app's current one, as a rollback uses. */
export function versionView(v: VersionRecord, app: AppRecord): VersionView {
  const release = releaseOf(v, app);
  const runtime: VersionView['runtime'] = { template: v.template, lane: v.lane };
  if (v.entrypoint !== undefined) runtime.entrypoint = v.entrypoint;
  if (v.build !== undefined) runtime.build = v.build;
  const view: VersionView = {
    version: v.version,
    timestamp: v.timestamp,
    template: v.template,
    lane: v.lane,
    source_hash: v.sourceHash,
    runtime,
    env: envNames(release.env),
    egress: { allowed_hosts: release.allowedHosts },
    ttl: release.ttl,
    live: app.phase !== 'Failed' && app.liveVersion === v.version,
  };
  if (v.rolledBackFrom !== undefined) view.rolled_back_from = v.rolledBackFrom;
  if (v.outcome !== undefined) view.outcome = v.outcome;
  if (v.reason !== undefined) view.reason = v.reason;
  if (v.message !== undefined) view.message = v.message;
  if (v.deployedBy !== undefined) view.deployed_by = v.deployedBy;
  return view;
}

export function nextVersion(store: Store, appId: string): number {
  return (store.listVersions(appId)[0]?.version ?? 0) + 1;
}

const unknownVersion = (message: string): AppError => new AppError(400, 'unknown_version', message);

const sourceGone = (appId: string, version: number): AppError =>
  unknownVersion(`the source of version ${version} of ${appId} is gone`);
