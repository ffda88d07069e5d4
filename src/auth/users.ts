import { AppError, notFound } from '../errors.js';
import type { Role, Store, UserRecord, UserStatus } from '../persistence/store.js';
import { hashApiKey, newApiKey } from './keys.js';
import { keepAnAdmin, type ConfiguredAdmins } from './last-admin.js';

/** A user as the API shows it: never the key hash. */
export interface UserJson {
  id: string;
  name: string;
  email?: string;
  role: Role;
  status: UserStatus;
  department?: string;
  created_at: string;
  updated_at: string;
}

export interface NewUser {
  name: string;
  role?: Role;
  department?: string;
  email?: string;
}

export interface UserPatch {
  role?: Role;
  status?: UserStatus;
  /** null clears it. */
  department?: string | null;
  /** null clears it. */
  email?: string | null;
}

export function userJson(user: UserRecord): UserJson {
  const json: UserJson = {
    id: user.id,
    name: user.name,
    role: user.role,
    status: user.status,
    created_at: user.createdAt,
    updated_at: user.updatedAt,
  };
  if (user.email) json.email = user.email;
  if (user.department) json.department = user.department;
  return json;
}

/**
 * Creates `apikey-<name>` with a fresh API key, returned here once; the store keeps only its hash.
 * `reservedNames` are the configured key entries: their user IDs belong to those keys.
 */
export function createUser(
  store: Store,
  input: NewUser,
  reservedNames: ReadonlySet<string>,
): { user: UserRecord; apiKey: string } {
  const id = `apikey-${input.name}`;
  if (reservedNames.has(input.name) || store.getUser(id)) {
    throw new AppError(409, 'name_taken', `user ${id} already exists`);
  }
  if (input.department !== undefined) checkDepartment(store, input.department);
  const apiKey = newApiKey();
  const now = new Date().toISOString();
  const user: UserRecord = {
    id,
    name: input.name,
    role: input.role ?? 'user',
    status: 'active',
    apiKeyHash: hashApiKey(apiKey),
    createdAt: now,
    updatedAt: now,
    ...(input.email ? { email: input.email } : {}),
    ...(input.department ? { department: input.department } : {}),
  };
  const stored = store.ensureUser(user);
  // ensureUser keeps an existing row: a concurrent create of the same name won.
  if (stored.apiKeyHash !== user.apiKeyHash)
    throw new AppError(409, 'name_taken', `user ${id} already exists`);
  return { user: stored, apiKey };
}

export function getUserOr404(store: Store, id: string): UserRecord {
  const user = store.getUser(id);
  if (!user) throw notFound(`user ${id}`);
  return user;
}

/**
 * Applies `patch`; refused (409 `last_admin`) when it would suspend or demote the last active
 * admin. The check and the write share one transaction, so two admins suspending each other at
 * once cannot both succeed.
 */
export function updateUser(
  store: Store,
  id: string,
  patch: UserPatch,
  configuredAdmins: ConfiguredAdmins,
): UserRecord {
  return store.transaction(() => {
    const before = getUserOr404(store, id);
    const user = { ...before };
    if (patch.role !== undefined) user.role = patch.role;
    if (patch.status !== undefined) user.status = patch.status;
    if (patch.department === null) delete user.department;
    else if (patch.department !== undefined) {
      checkDepartment(store, patch.department);
      user.department = patch.department;
    }
    if (patch.email === null || patch.email === '') delete user.email;
    else if (patch.email !== undefined) user.email = patch.email;
    keepAnAdmin(store, before, user, configuredAdmins);
    user.updatedAt = new Date().toISOString();
    store.putUser(user);
    return user;
  });
}

/** Deletes the user; refused (409 `last_admin`) for the last active admin. */
export function deleteUser(store: Store, id: string, configuredAdmins: ConfiguredAdmins): void {
  store.transaction(() => {
    const before = store.getUser(id);
    if (before) keepAnAdmin(store, before, undefined, configuredAdmins);
    if (!store.deleteUser(id)) throw notFound(`user ${id}`);
  });
}

/**
 * A well-formed reference to a department that does not exist. 409, not 404: the user the request
 * names may well exist, and a client must be able to tell the two apart.
 */
function checkDepartment(store: Store, id: string): void {
  if (!store.getDepartment(id)) {
    throw new AppError(
      409,
      'unknown_department',
      `department ${id} does not exist: create it first`,
      {
        department: id,
      },
    );
  }
}
