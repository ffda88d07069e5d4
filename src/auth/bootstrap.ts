import type { Config } from '../config/schema.js';
import type { Store } from '../persistence/store.js';
import { hashApiKey, newApiKey } from './keys.js';

export type BootstrapResult =
  | { kind: 'created'; userId: string; apiKey: string }
  | { kind: 'exists'; userId: string }
  | { kind: 'not-needed' };

export const BOOTSTRAP_ADMIN_ID = 'apikey-admin';

/**
 * First start with API-key auth and no key configured: nobody could ever log in, so Slipway creates
 * the admin user `apikey-admin` with a fresh key and keeps only the key's hash. Later starts find
 * the user and create nothing; deleting that user makes the next start issue a new key. Replicas
 * starting at once on an empty shared store (configmap) each try: the insert lands once, the
 * others find it (their key is never shown), so one key works, through every replica.
 */
export async function ensureBootstrapAdmin(config: Config, store: Store): Promise<BootstrapResult> {
  const { auth } = config;
  if (!auth.enabled || auth.mode !== 'apikey' || auth.apiKeys.length > 0)
    return { kind: 'not-needed' };
  if (store.getUser(BOOTSTRAP_ADMIN_ID)) return { kind: 'exists', userId: BOOTSTRAP_ADMIN_ID };
  const apiKey = newApiKey();
  const now = new Date().toISOString();
  const apiKeyHash = hashApiKey(apiKey);
  store.ensureUser({
    id: BOOTSTRAP_ADMIN_ID,
    name: 'admin',
    role: 'admin',
    status: 'active',
    apiKeyHash,
    createdAt: now,
    updatedAt: now,
  });
  // A store that writes behind knows only once the insert landed whether another replica's won.
  await store.flush?.();
  // Another process sharing the store won the race: its key is the one that works.
  if (store.getUser(BOOTSTRAP_ADMIN_ID)?.apiKeyHash !== apiKeyHash) {
    return { kind: 'exists', userId: BOOTSTRAP_ADMIN_ID };
  }
  return { kind: 'created', userId: BOOTSTRAP_ADMIN_ID, apiKey };
}

/**
 * Tells the operator on the console (stdout, never the logger, which may be shipped elsewhere):
 * the new key once, or one line on how to get a new one.
 */
export function announceBootstrap(
  result: BootstrapResult,
  baseURL: string,
  print: (line: string) => void = (line) => console.log(line),
): void {
  if (result.kind === 'created') {
    print(
      `slipway: created bootstrap admin ${result.userId}; its API key, shown only this once: ${result.apiKey}`,
    );
    print(
      `slipway: try it: curl -H "Authorization: Bearer ${result.apiKey}" ${baseURL}/api/whoami`,
    );
    print(`slipway: or open the dashboard at ${baseURL}/ and paste the key`);
  } else if (result.kind === 'exists') {
    print(
      `slipway: bootstrap admin ${result.userId} exists; for a new key delete that user ` +
        `(DELETE ${baseURL}/api/users/${result.userId}, or its store row) and restart, or set SVC_AUTH_API_KEY`,
    );
  }
}
