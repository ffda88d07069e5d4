import { AppError } from '../errors.js';
import type { Store, UserRecord } from '../persistence/store.js';

/**
 * Admins that come back by themselves: the users of configured admin keys (`auth.apiKeys` with
 * `role: admin`: their role comes from the key whatever their record says, and a deleted record is
 * provisioned again, active, on the key's next request), and the bootstrap admin while it is the
 * only way in (a deleted one is issued again, with a new key, at the next start).
 */
export type ConfiguredAdmins = ReadonlySet<string>;

const isActiveAdmin = (user: UserRecord, configured: ConfiguredAdmins): boolean =>
  user.status === 'active' && (user.role === 'admin' || configured.has(user.id));

/**
 * Refuses (409 `last_admin`) a change that would leave no active admin: `after` is the user as the
 * change leaves it, undefined for a delete. With no admin left nobody could manage users again:
 * every call of the suspended one is 401, and only editing the database would undo it.
 */
export function keepAnAdmin(
  store: Store,
  before: UserRecord,
  after: UserRecord | undefined,
  configured: ConfiguredAdmins,
): void {
  if (!isActiveAdmin(before, configured)) return;
  if (after !== undefined && isActiveAdmin(after, configured)) return;
  const left = store.listUsers().filter((user) => user.id !== before.id);
  if (after !== undefined) left.push(after);
  const stored = new Set(left.map((user) => user.id));
  const others =
    left.filter((user) => isActiveAdmin(user, configured)).length +
    [...configured].filter((id) => !stored.has(id)).length;
  if (others > 0) return;
  const change =
    after === undefined ? 'deleting' : after.status !== 'active' ? 'suspending' : 'demoting';
  throw new AppError(
    409,
    'last_admin',
    `user ${before.id} is the last active admin: ${change} it would leave no one able to ` +
      'manage users. Make another user admin first.',
    { user: before.id },
  );
}
