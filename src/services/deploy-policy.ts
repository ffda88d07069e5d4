import { isAdmin, type Identity } from '../auth/identity.js';
import type { Config } from '../config/schema.js';
import { AppError } from '../errors.js';
import type { AppRecord, Store } from '../persistence/store.js';

/** Refuses a name another owner holds, and a new app past the owner's or department's quota. */
export function assertMayDeployTo(
  store: Store,
  config: Config,
  identity: Identity,
  name: string,
): AppRecord | undefined {
  const existing = store.getApp(name);
  if (existing && existing.ownerId !== identity.userId) {
    // The name is public through its URL anyway; saying it is taken reveals nothing new.
    throw new AppError(409, 'name_taken', `the app name "${name}" belongs to another owner`);
  }
  if (!existing && !isAdmin(identity)) assertQuota(store, config, identity);
  return existing;
}

/** Admins have no quota; everyone else's apps are counted, and so is their sandbox memory. */
function assertQuota(store: Store, config: Config, identity: Identity): void {
  const { maxAppsPerOwner, maxSandboxMemoryMBPerOwner, maxAppsPerDepartment } = config.limits;
  const owned = store.listApps({ ownerId: identity.userId, limit: 1 }).total;
  if (maxAppsPerOwner > 0 && owned >= maxAppsPerOwner) {
    throw new AppError(429, 'quota_exceeded', `owner quota of ${maxAppsPerOwner} apps reached`);
  }
  // Every app may hold a sandbox of runtime.memoryLimitMB: the new one must fit beside the rest.
  const perApp = config.runtime.memoryLimitMB;
  if (maxSandboxMemoryMBPerOwner > 0 && (owned + 1) * perApp > maxSandboxMemoryMBPerOwner) {
    throw new AppError(
      429,
      'quota_exceeded',
      `owner quota of ${maxSandboxMemoryMBPerOwner} MB of sandbox memory reached ` +
        `(${owned} apps of ${perApp} MB each)`,
    );
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

/** An API key with scopes may do only what they name; no scopes means unrestricted. */
export function requireScope(identity: Identity, scope: string): void {
  if (identity.scopes.length > 0 && !identity.scopes.includes(scope)) {
    throw new AppError(403, 'policy_denied', `this API key lacks the "${scope}" scope`);
  }
}
