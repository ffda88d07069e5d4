/**
 * The audit of what admins do to users and departments: every create, change and delete that
 * reaches its handler ends in one event, `ok` with what changed, or refused with why (a name
 * taken, the last admin). The target is the user's or department's ID; no key, hash or password
 * is recorded.
 */
import type { Identity } from '../auth/identity.js';
import type {
  AdminAuditAction,
  AuditChange,
  AuditDetails,
  DepartmentRecord,
  UserRecord,
} from '../persistence/store.js';
import { callerTenant, outcomeOf, reasonOf, type AuditTrail } from './audit-trail.js';

export class AdminAudit {
  constructor(private readonly trail: AuditTrail) {}

  /** Runs the change and records it; a change that throws is recorded with its reason, then rethrown. */
  async change<T>(
    identity: Identity,
    action: AdminAuditAction,
    target: string,
    run: () => Promise<T>,
    details: (result: T) => AuditDetails = () => ({}),
  ): Promise<T> {
    const entry = { actor: identity.userId, action, target, tenantId: callerTenant(identity) };
    let result: T;
    try {
      result = await run();
    } catch (err) {
      this.trail.record({
        ...entry,
        outcome: outcomeOf(err),
        sourceHash: '',
        details: reasonOf(err),
      });
      throw err;
    }
    this.trail.record({ ...entry, outcome: 'ok', sourceHash: '', details: details(result) });
    return result;
  }
}

/** A user's role, status and department from and to; the email changed or not, never its value. */
export function userChanges(before: UserRecord | undefined, after: UserRecord): AuditDetails {
  const changes: AuditChange[] = [];
  for (const field of ['role', 'status', 'department'] as const) {
    const from = before?.[field];
    const to = after[field];
    if (from !== to) changes.push(fromTo(field, from, to));
  }
  if (before?.email !== after.email) changes.push({ field: 'email' });
  return { changes };
}

/** A department's name from and to; the description changed or not. */
export function departmentChanges(
  before: DepartmentRecord | undefined,
  after: DepartmentRecord,
): AuditDetails {
  const changes: AuditChange[] = [];
  if (before?.name !== after.name) changes.push(fromTo('name', before?.name, after.name));
  if (before?.description !== after.description) changes.push({ field: 'description' });
  return { changes };
}

function fromTo(field: string, from: string | undefined, to: string | undefined): AuditChange {
  return {
    field,
    ...(from === undefined ? {} : { from }),
    ...(to === undefined ? {} : { to }),
  };
}
