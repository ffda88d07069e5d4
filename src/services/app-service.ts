import type { AppRegistry } from '../actors/registry.js';
import { isAdmin, type Identity } from '../auth/identity.js';
import type { Config } from '../config/schema.js';
import type { Activity } from '../actors/app-activity.js';
import { CommitGate } from '../commit-gate.js';
import { AppError, notFound } from '../errors.js';
import { liveReleaseOf, liveVersionOf, releaseOf } from '../persistence/release.js';
import type { StorageHealth } from '../persistence/storage-health.js';
import type { Access, AppRecord, AppSummary, AuditChange, Store } from '../persistence/store.js';
import { page as pageOf } from '../persistence/memory-state.js';
import { classify } from '../sources/classify.js';
import { mintSourceKey } from '../sources/keys.js';
import type { SourceStore } from '../sources/source-store.js';
import { inspectTarball } from '../sources/tarball.js';
import type { StageClock } from '../stage-clock.js';
import type { AccessGate } from './direct-routes.js';
import {
  applyChange,
  configBase,
  releasesWith,
  sameSettings,
  validateChange,
  type AppChange,
} from './app-change.js';
import { AuditTrail, sourceHash } from './audit-trail.js';
import { AuditedActions } from './audited-actions.js';
import type { DeployMetadata } from './deploy-metadata.js';
import { assertMayDeployTo, requireScope } from './deploy-policy.js';
import { carriedRuntime, releaseRows, type CarriedRuntime } from './deploy-rows.js';
import { HistoryService, nextVersion, type VersionView } from './history-service.js';
import type { Log } from '../logging.js';

export { HISTORY_CAP } from './history-service.js';

/**
 * The one service layer behind the HTTP API and the MCP tools: ownership, policy, validation, and
 * the audit trail of every deploy (rollbacks included), delete, suspend and resume, refusals too.
 */
export class AppService {
  readonly audit: AuditTrail;
  readonly history: HistoryService;
  private readonly actions: AuditedActions;
  private readonly commits: CommitGate;

  constructor(private readonly deps: AppServiceDeps) {
    this.audit = deps.audit ?? new AuditTrail(deps.store, deps.log);
    this.commits = deps.commits ?? new CommitGate();
    this.history = new HistoryService({ ...deps, commits: this.commits });
    this.actions = new AuditedActions(
      this.audit,
      deps.store,
      (identity, id) => this.get(identity, id),
      // A deploy writes a source blob too; the other actions only rows.
      (action) =>
        deps.storage.verify(action === 'deploy' ? ['database', 'source store'] : undefined),
    );
  }

  /** Validates and stores the source, records the version, and waits up to the budget for Ready. */
  async deploy(
    identity: Identity,
    metadata: DeployMetadata,
    source: Buffer,
    clock?: StageClock,
  ): Promise<DeployOutcome> {
    const outcome = await this.actions.attempt(identity, 'deploy', metadata.name, {
      run: () => this.deployNow(identity, metadata, source, clock),
      hash: () => sourceHash(source),
    });
    this.actions.deployed(identity, outcome.app, outcome.version, outcome.sourceHash);
    clock?.mark('audit');
    return outcome;
  }

  /** The app's deploy history, newest first. */
  versions(identity: Identity, id: string): VersionView[] {
    return this.history.versions(this.get(identity, id).id);
  }

  /** Redeploys an earlier version's source as a new head version; audited as a deploy. */
  async rollback(
    identity: Identity,
    id: string,
    version: number,
    clock?: StageClock,
  ): Promise<DeployOutcome> {
    const app = this.actions.authorize(identity, 'deploy', id);
    const outcome = await this.actions.attempt(identity, 'deploy', id, {
      run: () => this.history.rollback(app, version, identity.userId, clock),
      hash: () => this.audit.hashOf(id, version),
    });
    const rollback = {
      ...(app.liveVersion === undefined ? {} : { from: app.liveVersion }),
      to: version,
    };
    this.actions.deployed(identity, outcome.app, outcome.version, outcome.sourceHash, { rollback });
    clock?.mark('audit');
    return outcome;
  }

  private async deployNow(
    identity: Identity,
    metadata: DeployMetadata,
    source: Buffer,
    clock?: StageClock,
  ): Promise<DeployOutcome> {
    requireScope(identity, 'deploy');
    const { store, sourceStore, config } = this.deps;
    const existing = assertMayDeployTo(store, config, identity, metadata.name);
    const version = nextVersion(store, metadata.name);
    const sourceKey = mintSourceKey(metadata.name, version);
    // Stored while it is inspected: the blob's fsyncs wait on the thread pool as the inspection
    // runs here. A source the inspection refuses is removed again, and its refusal is the answer.
    const storing = settled(sourceStore.put(sourceKey, source));
    const inspected = await settled(inspectTarball(source));
    clock?.mark('inspect');
    if (inspected.status === 'rejected') {
      // The store's fault still counts (it marks the store down); the refusal is the answer.
      const stored = await storing;
      if (stored.status === 'rejected') this.deps.storage.failed('source store', stored.reason);
      else await this.history.removeBlob(sourceKey, metadata.name);
      throw inspected.reason;
    }
    const runtime = carriedRuntime(metadata.runtime, existing && carriedFrom(store, existing));
    const info = inspected.value;
    const plan = classify(info, runtime);
    clock?.mark('classify');
    const now = new Date().toISOString();
    // A redeploy that makes the app private waits for its direct route to go (AccessGate).
    const closes = metadata.access === 'private' && existing && existing.access !== 'private';
    const gate = closes ? this.deps.accessGate : undefined;
    const rowsFor = (existing: AppRecord | undefined) =>
      releaseRows({
        metadata: { ...metadata, runtime },
        identity,
        plan,
        existing,
        live: existing ? liveReleaseOf(store, existing) : undefined,
        version,
        sourceKey,
        sourceHash: info.hash,
        now,
        defaultAccess: config.apps.defaultAccess,
      });
    // Unsynced: every answer to this deploy (ok, failed or refused) comes after its audit event,
    // a synced commit, which makes these rows durable with it. Their blob is synced already, so
    // the rows never reach the disk before what they point at.
    const write = (): void =>
      this.commits.commit(() =>
        store.unsynced(() =>
          store.transaction(() => {
            // Checked again inside the transaction: another deploy may have taken the name meanwhile.
            const rows = rowsFor(assertMayDeployTo(store, config, identity, metadata.name));
            store.putApp(rows.app);
            store.addVersion(rows.version);
          }),
        ),
      );
    const blob = storing.then((stored) => {
      if (stored.status === 'rejected')
        throw this.deps.storage.failed('source store', stored.reason);
      this.deps.storage.succeeded('source store');
    });
    // Its sandbox starts now, beside the blob's fsyncs, the rows and the machine's first steps;
    // the machine takes it only if the rows it reads plan the very same start.
    if (plan.ok) this.deps.registry.headStart(rowsFor(existing), { source, stored: blob });
    clock?.mark('head-start');
    try {
      await blob;
      clock?.mark('blob');
      await this.writeRows(metadata.name, sourceKey, write, gate);
      clock?.mark('rows');
      await this.history.prune(metadata.name);
      clock?.mark('prune');
      if (!plan.ok && !existing) {
        return { app: this.mustGet(metadata.name), sourceHash: info.hash, version };
      }
      const app = await this.deps.registry.deploy(metadata.name, version, {
        waitMs: this.deps.deployWaitMs,
        clock,
      });
      return { app, sourceHash: info.hash, version };
    } finally {
      this.deps.registry.dropHeadStart(metadata.name, version);
    }
  }

  /** A deploy's rows, once the access gate is closed if it closes one. */
  private async writeRows(
    appId: string,
    sourceKey: string,
    write: () => void,
    gate: AccessGate | undefined,
  ): Promise<void> {
    try {
      if (gate) await gate.closing(appId, write);
      else write();
    } catch (err) {
      // The rows did not land: the blob is an orphan, and the original error is the answer.
      await this.history.removeBlob(sourceKey, appId);
      throw err;
    }
  }

  /** The apps the caller may see, as views show them (env names only). */
  list(
    identity: Identity,
    page: { limit?: number; offset?: number },
  ): { items: AppSummary[]; total: number } {
    const ownerId = seesAll(identity) ? undefined : identity.userId;
    const { store, registry } = this.deps;
    const going = registry.deleting;
    if (going.size === 0) {
      return store.listAppSummaries({ ownerId, limit: page.limit, offset: page.offset });
    }
    // Rare and brief (a delete reaping its sandboxes): the page is cut here, after leaving them out.
    const items = store.listAppSummaries({ ownerId }).items.filter((a) => !going.has(a.id));
    return { items: pageOf(items, page.limit, page.offset), total: items.length };
  }

  /** `get` for a view: the same check, the env's names only (no value is decrypted). */
  summary(identity: Identity, id: string): AppSummary {
    const app = this.deps.registry.deleting.has(id) ? undefined : this.deps.store.getAppSummary(id);
    if (!app || !(seesAll(identity) || app.ownerId === identity.userId)) throw notFound('app');
    return app;
  }

  /** The app if the caller may see it; another owner's app is not found, never forbidden. */
  get(identity: Identity, id: string): AppRecord {
    const app = this.deps.store.getApp(id);
    if (!app || !(seesAll(identity) || app.ownerId === identity.userId)) throw notFound('app');
    return app;
  }

  async delete(identity: Identity, id: string): Promise<AppRecord> {
    const app = this.actions.authorize(identity, 'delete', id);
    const hash = this.audit.hashOf(id);
    await this.actions.attempt(identity, 'delete', id, {
      run: () => this.deps.registry.delete(id),
    });
    this.actions.recorded(identity, 'delete', app, 'ok', hash);
    return app;
  }

  async suspend(identity: Identity, id: string): Promise<AppRecord> {
    const app = this.actions.authorize(identity, 'suspend', id);
    const after = await this.actions.attempt(identity, 'suspend', id, {
      run: () => this.deps.registry.suspend(id),
    });
    const took = app.phase !== 'Suspended' && after.phase === 'Suspended';
    this.actions.recorded(identity, 'suspend', after, took ? 'ok' : 'noop', this.audit.hashOf(id));
    return after;
  }

  async resume(identity: Identity, id: string, clock?: StageClock): Promise<AppRecord> {
    const app = this.actions.authorize(identity, 'resume', id);
    const after = await this.actions.attempt(identity, 'resume', id, {
      run: () => this.deps.registry.resume(id, { waitMs: this.deps.deployWaitMs, clock }),
    });
    const outcome = app.phase !== 'Suspended' ? 'noop' : after.phase === 'Failed' ? 'failed' : 'ok';
    this.actions.recorded(identity, 'resume', after, outcome, this.audit.hashOf(id));
    return after;
  }

  /**
   * Owner or admin: cancels the deploy or rollback in flight (of `version`, when named); the
   * release that serves goes on serving. 409 `nothing_to_cancel` when none is in flight.
   */
  cancel(identity: Identity, id: string, version?: number): AppRecord {
    const app = this.actions.authorize(identity, 'cancel', id);
    const hash = this.audit.hashOf(app.id);
    const after = this.deps.registry.cancel(app.id, version);
    if (!after) {
      this.actions.recorded(identity, 'cancel', app, 'noop', hash);
      const what = version === undefined ? 'no deploy' : `no deploy of version ${version}`;
      throw new AppError(409, 'nothing_to_cancel', `${what} of ${app.id} is in flight`);
    }
    const cancelled = after.lastDeploy?.version;
    const details = cancelled === undefined ? undefined : { version: cancelled };
    this.actions.recorded(identity, 'cancel', after, 'ok', hash, details);
    return after;
  }

  /** What the deploy, rollback or resume of the app in flight does now, if one is. */
  activity(id: string): Activity | undefined {
    return this.deps.registry.activity(id);
  }

  /**
   * Owner or admin: makes the app public or private, from the next request on (a private app's
   * URL needs a grant, see src/app-hosts/app-access.ts). Audited as `update`; `noop` when unchanged.
   */
  async setAccess(identity: Identity, id: string, access: Access): Promise<AppRecord> {
    const before = this.actions.authorize(identity, 'update', id);
    const gate = this.deps.accessGate;
    const after = await this.actions.attempt(identity, 'update', id, {
      run: async () =>
        access === 'private' && gate
          ? gate.closing(id, () => this.storeAccess(id, access))
          : this.storeAccess(id, access),
    });
    if (access === 'public') gate?.changed(id);
    const was = before.access ?? 'public';
    const outcome = was === access ? 'noop' : 'ok';
    this.actions.recorded(identity, 'update', after, outcome, this.audit.hashOf(id), {
      changes: [{ field: 'access', from: was, to: access }],
    });
    return after;
  }

  /**
   * PATCH /v1/apps/{id}, MCP update_app: access as a setting, then env, ttl and egress as a config
   * release of the live source (audited as a deploy; the trail holds no env, names nor values). The
   * whole change is checked before any of it is done, after the caller's right to the app (another
   * owner's app is not found whatever the body says); one that changes nothing makes no release.
   */
  async update(identity: Identity, id: string, body: unknown): Promise<UpdateOutcome> {
    const app = this.actions.authorize(identity, 'update', id);
    const change = validateChange(body);
    const from = releasesWith(change) ? configBase(this.deps.store, app) : undefined;
    if (from) applyChange(releaseOf(from, app), change);
    const after =
      change.access === undefined ? app : await this.setAccess(identity, id, change.access);
    if (!from) return { app: after };
    const before = this.actions.authorize(identity, 'deploy', id);
    const changes = releaseChanges(change);
    if (sameSettings(releaseOf(from, before), applyChange(releaseOf(from, before), change))) {
      this.actions.recorded(identity, 'deploy', before, 'noop', from.sourceHash, { changes });
      return { app: before };
    }
    const outcome = await this.actions.attempt(identity, 'deploy', id, {
      run: () =>
        this.history.reconfigure(
          before,
          from,
          (release) => applyChange(release, change),
          identity.userId,
        ),
      hash: () => from.sourceHash,
    });
    this.actions.deployed(identity, outcome.app, outcome.version, outcome.sourceHash, { changes });
    return outcome;
  }

  private storeAccess(id: string, access: Access): AppRecord {
    const { store } = this.deps;
    return store.transaction(() => {
      // Read inside the transaction: the machine writes its fields over the row as stored.
      const app = store.getApp(id);
      if (!app) throw notFound('app');
      const next: AppRecord = { ...app, access };
      store.putApp(next);
      return next;
    });
  }

  private mustGet(id: string): AppRecord {
    const app = this.deps.store.getApp(id);
    if (!app) throw notFound('app');
    return app;
  }
}

export interface AppServiceDeps {
  store: Store;
  sourceStore: SourceStore;
  registry: AppRegistry;
  config: Config;
  /** Refuses changes while a store cannot write, and turns storage faults into 503s. */
  storage: StorageHealth;
  /** The data path's say when an app turns private (Kubernetes direct routes); none: nothing to wait for. */
  accessGate?: AccessGate;
  /** A deploy's or release's rows land through it (drains); made here when omitted. */
  commits?: CommitGate;
  deployWaitMs?: number;
  log?: Log;
  /** Shared with whatever records the system's own actions; made here when omitted. */
  audit?: AuditTrail;
}

export interface UpdateOutcome {
  app: AppRecord;
  /** The config release the change made, if it made one. */
  version?: number;
}

export interface DeployOutcome {
  app: AppRecord;
  version: number;
  sourceHash: string;
}

/**
 * The release fields a PATCH changes, for the trail: env and egress as fields only (the trail
 * holds no env, names nor values), the ttl with its new value.
 */
function releaseChanges(change: AppChange): AuditChange[] {
  const changes: AuditChange[] = [];
  if (change.env) changes.push({ field: 'env' });
  if (change.ttl !== undefined) changes.push({ field: 'ttl', to: change.ttl });
  if (change.allowedHosts !== undefined) changes.push({ field: 'egress.allowed_hosts' });
  return changes;
}

/** Admins, and everyone when auth is disabled, see every app. */
const seesAll = (identity: Identity): boolean => isAdmin(identity);

/**
 * What a redeploy without runtime asks for again: the live release's overrides and build, or
 * while none serves, the newest release's.
 */
function carriedFrom(store: Store, app: AppRecord): CarriedRuntime {
  const from = liveVersionOf(store, app) ?? store.listVersions(app.id)[0];
  return { overrides: from?.overrides, build: liveReleaseOf(store, app).build };
}

/** The promise's outcome, never a rejection: awaited later, its failure is not left unhandled. */
function settled<T>(promise: Promise<T>): Promise<PromiseSettledResult<T>> {
  return promise.then(
    (value) => ({ status: 'fulfilled', value }),
    (reason: unknown) => ({ status: 'rejected', reason }),
  );
}
