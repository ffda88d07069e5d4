import type { AppRegistry } from '../actors/registry.js';
import { isAdmin, type Identity } from '../auth/identity.js';
import type { Config } from '../config/schema.js';
import { AppError, notFound } from '../errors.js';
import type { AppRecord, Store } from '../persistence/store.js';
import { classify } from '../sources/classify.js';
import { mintSourceKey } from '../sources/keys.js';
import type { SourceStore } from '../sources/source-store.js';
import { inspectTarball } from '../sources/tarball.js';
import type { DeployMetadata } from './deploy-metadata.js';

/** The one service layer behind the HTTP API and the MCP tools: ownership, policy, validation. */
export class AppService {
  constructor(private readonly deps: AppServiceDeps) {}

  /** Validates and stores the source, records the version, and waits up to the budget for Ready. */
  async deploy(
    identity: Identity,
    metadata: DeployMetadata,
    source: Buffer,
  ): Promise<DeployOutcome> {
    requireScope(identity, 'deploy');
    const { store, sourceStore } = this.deps;
    this.assertMayDeployTo(identity, metadata.name);
    const info = await inspectTarball(source);
    const version = nextVersion(store, metadata.name);
    const sourceKey = mintSourceKey(metadata.name, version);
    const plan = classify(info, metadata.runtime);
    const existing = store.getApp(metadata.name);
    if (!plan.ok && existing) {
      // A configuration gap never takes down what serves now; the answer carries the diagnosis.
      throw deployFailed(metadata.name, plan.reason, plan.message);
    }
    await sourceStore.put(sourceKey, source);
    const now = new Date().toISOString();
    try {
      store.transaction(() => {
        // Checked again inside the transaction: another deploy may have taken the name meanwhile.
        const existing = this.assertMayDeployTo(identity, metadata.name);
        const lane = plan.ok ? plan.lane : (metadata.runtime.lane ?? 'fast');
        const template = plan.ok ? plan.template : (metadata.runtime.template ?? 'unknown');
        const entrypoint = plan.ok ? plan.entrypoint : metadata.runtime.entrypoint;
        store.putApp({
          id: metadata.name,
          name: metadata.name,
          ownerId: existing?.ownerId ?? identity.userId,
          department: existing?.department ?? identity.department,
          phase: plan.ok ? 'Pending' : 'Failed',
          reason: plan.ok ? 'Queued' : plan.reason,
          message: plan.ok ? `version ${version} queued` : plan.message,
          url: existing?.url,
          lane,
          template,
          entrypoint,
          env: metadata.env,
          allowedHosts: metadata.allowedHosts,
          ttl: metadata.ttl,
          currentVersion: existing?.currentVersion ?? 0,
          createdAt: existing?.createdAt ?? now,
          lastDeployedAt: now,
          snapshot: existing?.snapshot,
        });
        store.addVersion({
          appId: metadata.name,
          version,
          timestamp: now,
          template,
          lane,
          entrypoint,
          sourceHash: info.hash,
          sourceKey,
        });
      });
    } catch (err) {
      await sourceStore.remove(sourceKey).catch(() => undefined);
      throw err;
    }
    await this.pruneHistory(metadata.name);
    if (!plan.ok) return { app: this.mustGet(metadata.name), sourceHash: info.hash, version };
    const app = await this.deps.registry.deploy(metadata.name, version, {
      waitMs: this.deps.deployWaitMs,
    });
    return { app, sourceHash: info.hash, version };
  }

  list(
    identity: Identity,
    page: { limit?: number; offset?: number },
  ): { items: AppRecord[]; total: number } {
    const ownerId = seesAll(identity) ? undefined : identity.userId;
    return this.deps.store.listApps({ ownerId, limit: page.limit, offset: page.offset });
  }

  /** The app if the caller may see it; another owner's app is not found, never forbidden. */
  get(identity: Identity, id: string): AppRecord {
    const app = this.deps.store.getApp(id);
    if (!app || !(seesAll(identity) || app.ownerId === identity.userId)) throw notFound('app');
    return app;
  }

  async delete(identity: Identity, id: string): Promise<AppRecord> {
    const app = this.get(identity, id);
    requireScope(identity, 'deploy');
    await this.deps.registry.delete(id);
    return app;
  }

  async suspend(identity: Identity, id: string): Promise<AppRecord> {
    this.get(identity, id);
    requireScope(identity, 'deploy');
    return this.deps.registry.suspend(id);
  }

  async resume(identity: Identity, id: string): Promise<AppRecord> {
    this.get(identity, id);
    requireScope(identity, 'deploy');
    return this.deps.registry.resume(id, { waitMs: this.deps.deployWaitMs });
  }

  private mustGet(id: string): AppRecord {
    const app = this.deps.store.getApp(id);
    if (!app) throw notFound('app');
    return app;
  }

  /** Refuses a name another owner holds, and a new app past the owner's quota. */
  private assertMayDeployTo(identity: Identity, name: string): AppRecord | undefined {
    const { store, config } = this.deps;
    const existing = store.getApp(name);
    if (existing && existing.ownerId !== identity.userId) {
      // The name is public through its URL anyway; saying it is taken reveals nothing new.
      throw new AppError(409, 'name_taken', `the app name "${name}" belongs to another owner`);
    }
    if (!existing) {
      const { maxAppsPerOwner, maxAppsPerDepartment } = config.limits;
      if (
        maxAppsPerOwner > 0 &&
        store.listApps({ ownerId: identity.userId, limit: 1 }).total >= maxAppsPerOwner
      ) {
        throw new AppError(429, 'quota_exceeded', `owner quota of ${maxAppsPerOwner} apps reached`);
      }
      if (maxAppsPerDepartment > 0 && identity.department) {
        const inDepartment = store
          .listApps({})
          .items.filter((a) => a.department === identity.department).length;
        if (inDepartment >= maxAppsPerDepartment) {
          throw new AppError(
            429,
            'quota_exceeded',
            `department quota of ${maxAppsPerDepartment} apps reached`,
          );
        }
      }
    }
    return existing;
  }

  private async pruneHistory(appId: string): Promise<void> {
    const pruned = this.deps.store.pruneVersions(appId, HISTORY_CAP);
    for (const version of pruned) {
      await this.deps.sourceStore.remove(version.sourceKey).catch((err: unknown) => {
        this.deps.log?.('warn', 'could not remove a pruned source blob', {
          key: version.sourceKey,
          err,
        });
      });
    }
  }
}

export interface AppServiceDeps {
  store: Store;
  sourceStore: SourceStore;
  registry: AppRegistry;
  config: Config;
  deployWaitMs?: number;
  log?: (level: 'info' | 'warn' | 'error', msg: string, extra?: object) => void;
}

export interface DeployOutcome {
  app: AppRecord;
  version: number;
  sourceHash: string;
}

/** Versions kept per app (design.md §6); older ones and their blobs are pruned. */
export const HISTORY_CAP = 20;

/** Admins, and everyone when auth is disabled, see every app. */
const seesAll = (identity: Identity): boolean => isAdmin(identity);

/** A deploy that failed: the spec's `deploy_failed`, with the app's diagnosis in details. */
export function deployFailed(
  appId: string,
  reason: string,
  message: string,
  logs?: string[],
): AppError {
  return new AppError(500, 'deploy_failed', `deploy of ${appId} failed: ${reason}: ${message}`, {
    app_id: appId,
    phase: 'Failed',
    reason,
    message,
    status_url: `/v1/apps/${appId}`,
    ...(logs ? { logs } : {}),
  });
}

function requireScope(identity: Identity, scope: string): void {
  if (identity.scopes.length > 0 && !identity.scopes.includes(scope)) {
    throw new AppError(403, 'policy_denied', `this API key lacks the "${scope}" scope`);
  }
}

function nextVersion(store: Store, appId: string): number {
  return (store.listVersions(appId)[0]?.version ?? 0) + 1;
}
