import { isAdmin, type Identity } from '../auth/identity.js';
import { AppError } from '../errors.js';
import type {
  AppRecord,
  AuditAction,
  AuditDetails,
  AuditOutcome,
  Store,
} from '../persistence/store.js';
import { callerTenant, outcomeOf, reasonOf, summaryOf, type AuditTrail } from './audit-trail.js';
import { requireScope } from './deploy-policy.js';

/**
 * How AppService audits what users do: every action ends in exactly one event, whether it was
 * done, refused (ownership, scope, name, quota, policy: `denied`), failed or had bad input.
 */
export class AuditedActions {
  constructor(
    private readonly trail: AuditTrail,
    private readonly store: Store,
    /** Ownership: the app if the caller may see it, else 404. */
    private readonly get: (identity: Identity, id: string) => AppRecord,
    /** Throws 503 storage_unavailable unless the stores the action needs take a write now. */
    private readonly writable: (action: AuditAction) => void,
  ) {}

  /**
   * The app, when the caller may act on it; a refusal is audited before it is thrown. Nothing is
   * done, and nothing audited, while the store cannot write: the action's event could not be.
   */
  authorize(identity: Identity, action: AuditAction, id: string): AppRecord {
    this.writable(action);
    try {
      const app = this.get(identity, id);
      requireScope(identity, 'deploy');
      return app;
    } catch (err) {
      this.refused(identity, action, id, err);
      throw err;
    }
  }

  /** Runs the action; if it throws, the refusal or failure is audited and rethrown. */
  async attempt<T>(
    identity: Identity,
    action: AuditAction,
    target: string,
    how: { run: () => Promise<T>; hash?: () => string },
  ): Promise<T> {
    this.writable(action);
    try {
      const result = await how.run();
      // A store that writes behind (configmap): the action is answered once its writes landed.
      await this.store.flush?.();
      return result;
    } catch (err) {
      this.refused(identity, action, target, err, how.hash);
      throw err;
    }
  }

  /** The action happened to `app`, with this outcome; true when its event landed now. */
  recorded(
    identity: Identity,
    action: AuditAction,
    app: AppRecord,
    outcome: AuditOutcome,
    hash: string,
    details?: AuditDetails,
  ): boolean {
    return this.trail.record({
      actor: identity.userId,
      action,
      target: app.id,
      outcome,
      tenantId: this.trail.tenantOf(app),
      sourceHash: hash,
      details,
    });
  }

  /**
   * A deploy was accepted: `ok` even when still on its way (202), `failed` when its version failed
   * (the app may still be Ready on the version before it). `details` say what kind of deploy it
   * was (a rollback, a config release); the version it made and why it failed are added here.
   */
  deployed(
    identity: Identity,
    app: AppRecord,
    version: number,
    hash: string,
    details: AuditDetails = {},
  ): void {
    const last = app.lastDeploy;
    const mine = last?.version === version ? last : undefined;
    const failed = app.phase === 'Failed' || mine?.outcome === 'Failed';
    const why = failed ? (mine?.reason ?? app.reason) : undefined;
    const said = failed ? summaryOf(mine?.message ?? app.message) : undefined;
    const landed = this.recorded(identity, 'deploy', app, failed ? 'failed' : 'ok', hash, {
      version,
      ...details,
      ...(why ? { reason: why } : {}),
      ...(said ? { message: said } : {}),
    });
    // The release's rows were committed unsynced for this event's commit to sync them
    // (app-service.ts, history-service.ts). With the event left for a retry (a full disk takes no
    // new commit), they are synced as they are, before the answer.
    if (!landed) this.store.syncWritten();
  }

  /**
   * Audits an action that threw. Nothing is recorded for a name no app has (nothing was acted on);
   * an attempt on another owner's app is, as `denied`, under the caller's tenant.
   */
  private refused(
    identity: Identity,
    action: AuditAction,
    target: string,
    err: unknown,
    hash?: () => string,
  ): void {
    const app = this.store.getApp(target);
    if (!app && err instanceof AppError && err.status === 404) return;
    const mine = app !== undefined && (isAdmin(identity) || app.ownerId === identity.userId);
    this.trail.record({
      actor: identity.userId,
      action,
      target,
      outcome: outcomeOf(err),
      tenantId: mine ? this.trail.tenantOf(app) : callerTenant(identity),
      sourceHash: hash?.() ?? (app ? this.trail.hashOf(target) : ''),
      details: reasonOf(err),
    });
  }
}
