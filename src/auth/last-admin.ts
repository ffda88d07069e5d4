import { AppError } from '../errors.js';
import type { Store, UserRecord } from '../persistence/store.js';

/** The admins the server's configuration gives, which the last-admin rule treats apart. */
export interface ConfiguredAdmins {
  /** The users of admin keys in `auth.apiKeys`: the configuration decides what they are. */
  keys: ReadonlySet<string>;
  /** The bootstrap admin while it is the only way in: a deleted one is issued again at start. */
  bootstrap?: string;
}

const isActiveAdmin = (user: UserRecord): boolean =>
  user.status === 'active' && user.role === 'admin';

/**
 * Refuses (409 `last_admin`) a change that would leave no active admin: `after` is the user as the
 * change leaves it, undefined for a delete. With no admin left nobody could manage users again:
 * every call of the suspended one is 401, and only editing the database would undo it. A
 * configured admin key's user is never suspended, demoted or deleted through the API (409
 * `configured_admin`).
 */
export function keepAnAdmin(
  store: Store,
  before: UserRecord,
  after: UserRecord | undefined,
  configured: ConfiguredAdmins,
): void {
  if (!isActiveAdmin(before)) return;
  if ((after === undefined || !isActiveAdmin(after)) && configured.keys.has(before.id)) {
    // The configuration made it an admin, and so should it unmake it: suspended or demoted here,
    // the operator's own way in would be shut while the configuration still names it (a client
    // holding only that key, such as a schema-driven test run, would lock itself out whatever
    // other admins exist); deleted, it would come back on the key's next request, as if the
    // delete had not happened.
    throw new AppError(
      409,
      'configured_admin',
      `user ${before.id} is an admin key of the server's configuration (auth.apiKeys): it cannot ` +
        'be suspended, demoted or deleted through the API. Change the configuration instead.',
      { user: before.id },
    );
  }
  if (after !== undefined && isActiveAdmin(after)) return;
  const left = store.listUsers().filter((user) => user.id !== before.id);
  if (after !== undefined) left.push(after);
  const stored = new Set(left.map((user) => user.id));
  const returning = [...configured.keys, ...(configured.bootstrap ? [configured.bootstrap] : [])];
  const others =
    left.filter((user) => isActiveAdmin(user)).length +
    returning.filter((id) => !stored.has(id)).length;
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
