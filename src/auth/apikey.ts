import { readFileSync } from 'node:fs';
import { timingSafeEqual } from 'node:crypto';
import { ConfigError } from '../config/load.js';
import type { ApiKeyEntry } from '../config/schema.js';
import { AppError, unauthenticated } from '../errors.js';
import { asStorageUnavailable } from '../persistence/storage-faults.js';
import type { Store, UserRecord } from '../persistence/store.js';
import { sha256 } from './keys.js';
import type { AuthMode, AuthModeFactory, Principal } from './auth-mode.js';

/**
 * API keys: the configured `auth.apiKeys` (literal, `env:VAR` or `file:path`, read once at start)
 * and the keys Slipway issued, of which the store holds only the sha256 (`apiKeyHash`).
 */
export const apikeyMode: AuthModeFactory = {
  name: 'apikey',
  create: ({ config, store, log }): AuthMode => {
    const keys = resolveApiKeys(config.auth.apiKeys);
    return {
      name: 'apikey',
      bearerVerdictLasts: true,
      verify: (context) => {
        const digest = context.digest();
        const entry = matchConfigured(keys, digest);
        if (entry) return entryPrincipal(entry);
        const user = findIssued(store, digest.toString('hex'), (err) =>
          log.error({ err }, 'user store lookup failed'),
        );
        if (user) return userPrincipal(user);
        throw unauthenticated('invalid API key');
      },
    };
  },
};

export interface ResolvedKey {
  entry: ApiKeyEntry;
  digest: Buffer;
}

/** Reads every entry's secret now; a missing variable or file stops the start, naming the entry. */
export function resolveApiKeys(
  entries: readonly ApiKeyEntry[],
  env: Record<string, string | undefined> = process.env,
): ResolvedKey[] {
  const seenNames = new Set<string>();
  const seenDigests = new Set<string>();
  return entries.map((entry, index) => {
    const where = `auth.apiKeys[${index}] (${entry.name})`;
    if (seenNames.has(entry.name)) throw new ConfigError(`config: ${where}: duplicate name`);
    seenNames.add(entry.name);
    const digest = sha256(readSecret(entry.key, where, env));
    const hex = digest.toString('hex');
    if (seenDigests.has(hex))
      throw new ConfigError(`config: ${where}: same key as an earlier entry`);
    seenDigests.add(hex);
    return { entry, digest };
  });
}

function readSecret(spec: string, where: string, env: Record<string, string | undefined>): string {
  if (spec.startsWith('env:')) {
    const name = spec.slice(4);
    const value = env[name]?.trim();
    if (!value)
      throw new ConfigError(`config: ${where}: environment variable ${name} is not set or empty`);
    return value;
  }
  if (spec.startsWith('file:')) {
    const path = spec.slice(5);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'read error';
      throw new ConfigError(`config: ${where}: cannot read key file ${path} (${code})`);
    }
    const value = text.trim();
    if (!value) throw new ConfigError(`config: ${where}: key file ${path} is empty`);
    return value;
  }
  return spec;
}

/**
 * Compares the digest with every configured key, in constant time and without stopping at a match,
 * so the time taken says nothing about which key (or how much of one) matched.
 */
function matchConfigured(keys: readonly ResolvedKey[], digest: Buffer): ApiKeyEntry | undefined {
  let found: ApiKeyEntry | undefined;
  for (const key of keys) {
    const equal = timingSafeEqual(key.digest, digest);
    if (equal && found === undefined) found = key.entry;
  }
  return found;
}

function findIssued(
  store: Store,
  hash: string,
  onError: (err: unknown) => void,
): UserRecord | undefined {
  try {
    return store.findUserByKeyHash(hash);
  } catch (err) {
    onError(err);
    throw (
      asStorageUnavailable(err) ??
      new AppError(503, 'not_ready', 'the user store is not available; try again')
    );
  }
}

const entryPrincipal = (entry: ApiKeyEntry): Principal => ({
  userId: `apikey-${entry.name}`,
  name: entry.name,
  role: entry.role,
  ...(entry.department ? { department: entry.department } : {}),
  scopes: [...entry.scopes],
});

const userPrincipal = (user: UserRecord): Principal => ({
  userId: user.id,
  name: user.name,
  role: user.role,
  scopes: [],
});
