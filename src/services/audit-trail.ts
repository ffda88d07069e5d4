/**
 * The audit trail (spec §2 Audit event, §4 GET /v1/audit): every deploy (rollbacks included),
 * delete, suspend and resume, by a user or by the system (idle suspend, wake on request), allowed
 * or not. Append-only: nothing here, nor any route or tool, changes or deletes an event.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { AppEvent, AppRegistry } from '../actors/registry.js';
import type { Identity } from '../auth/identity.js';
import { AppError } from '../errors.js';
import {
  APP_AUDIT_ACTIONS,
  type AppRecord,
  type AuditAction,
  type AuditDetails,
  type AuditEvent,
  type AuditOutcome,
  type Store,
} from '../persistence/store.js';
import { WriteRetry } from '../persistence/write-retry.js';
import type { Log } from '../logging.js';

/** The actor of what the app machine does on its own: idle suspends and wakes on request. */
export const SYSTEM_ACTOR = 'system';

export const AUDIT_DEFAULT_LIMIT = 200;
/** An event's message is a diagnosis, not a log: longer ones are cut. */
export const MAX_MESSAGE = 500;
export const AUDIT_MAX_LIMIT = 1_000;

export interface AuditEntry {
  actor: string;
  action: AuditAction;
  target: string;
  outcome: AuditOutcome;
  tenantId: string;
  sourceHash: string;
  details?: AuditDetails;
}

export class AuditTrail {
  private readonly writes: WriteRetry;

  constructor(
    private readonly store: Store,
    log: Log = () => undefined,
    private readonly now: () => number = () => Date.now(),
    writes?: WriteRetry,
  ) {
    this.writes = writes ?? new WriteRetry({ log });
  }

  /**
   * Appends one event. The action it records has happened already (and the store took a write
   * just before it, see AuditedActions), so a write the disk refuses now is kept and retried until
   * it lands rather than turned into an error for a caller whose action did take place. True
   * when it landed now.
   */
  record(entry: AuditEntry): boolean {
    const event: AuditEvent = {
      id: randomUUID(),
      time: new Date(this.now()).toISOString(),
      actor: entry.actor,
      action: entry.action,
      target: entry.target,
      outcome: entry.outcome,
      tenant_id: entry.tenantId,
      source_hash: entry.sourceHash,
    };
    if (entry.details && Object.keys(entry.details).length > 0) event.details = entry.details;
    return this.writes.run(`audit:${event.id}`, () => this.store.appendAudit(event));
  }

  list(query: { actor?: string; action?: string; app?: string; limit?: number }): AuditEvent[] {
    const limit = Math.min(AUDIT_MAX_LIMIT, query.limit ?? AUDIT_DEFAULT_LIMIT);
    return this.store.listAudit({ ...query, limit });
  }

  /**
   * The app's own feed, for its owner: what was done to it since it was created. Events on an
   * earlier app of the same name (deleted, perhaps someone else's) and events on users or
   * departments that share its name are not its.
   */
  ofApp(app: Pick<AppRecord, 'id' | 'createdAt'>, limit = AUDIT_DEFAULT_LIMIT): AuditEvent[] {
    return this.store.listAudit({
      app: app.id,
      actions: APP_AUDIT_ACTIONS,
      since: app.createdAt,
      limit: Math.min(AUDIT_MAX_LIMIT, limit),
    });
  }

  /** Records what the system does on its own; what users do, the service records with the user. */
  follow(registry: AppRegistry): () => void {
    return registry.on((event) => {
      if (event.initiator !== 'system') return;
      if (event.kind !== 'suspend' && event.kind !== 'resume') return;
      const entry = this.systemEntry(event, event.kind);
      // A turn later: a wake's resume comes on a visitor's request path, and its synced commit then
      // overlaps the sandbox's start instead of holding up the claim and the inject call.
      setImmediate(() => this.record(entry));
    });
  }

  /** The app's tenant: its owner's department, or the owner when there is none. */
  tenantOf(app: Pick<AppRecord, 'department' | 'ownerId'>): string {
    return app.department ?? app.ownerId;
  }

  /** The source hash of the app's version (its current one by default); '' if none is stored. */
  hashOf(appId: string, version?: number): string {
    const v = version ?? this.store.getApp(appId)?.currentVersion ?? 0;
    return this.store.getVersion(appId, v)?.sourceHash ?? '';
  }

  private systemEntry(event: AppEvent, action: AuditAction): AuditEntry {
    const app = this.store.getApp(event.app_id);
    return {
      actor: SYSTEM_ACTOR,
      action,
      target: event.app_id,
      outcome: 'ok',
      tenantId: app ? this.tenantOf(app) : event.owner,
      sourceHash: this.hashOf(event.app_id, event.version),
    };
  }
}

/** The tenant of a caller acting outside an app it may touch: its department, or itself. */
export const callerTenant = (identity: Identity): string => identity.department ?? identity.userId;

/** What a refusal or failure adds to its event: the error code and what the caller was told. */
export function reasonOf(err: unknown): AuditDetails {
  if (!(err instanceof AppError)) return { reason: 'internal_error' };
  return { reason: err.code, message: summaryOf(err.message) };
}

/**
 * A message without the lines it quotes (a failure's `; last lines:`): what an app printed stays
 * in its log, its owner's to read, out of the trail.
 */
export const summaryOf = (message: string): string =>
  (message.split('\n')[0] ?? '').replace(/; last lines:$/, '').slice(0, MAX_MESSAGE);

/** The audit outcome of an action that threw. */
export function outcomeOf(err: unknown): AuditOutcome {
  if (!(err instanceof AppError)) return 'error';
  if (err.code === 'deploy_failed') return 'failed';
  if ([403, 404, 409, 429].includes(err.status)) return 'denied';
  return err.status < 500 ? 'rejected' : 'error';
}

/** The spec's prefix-qualified hash of a source the deploy never got to inspect. */
export const sourceHash = (source: Buffer): string =>
  `sha256:${createHash('sha256').update(source).digest('hex')}`;
