import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { ConfigError } from '../config/load.js';
import { ENV_KEY_BYTES } from './env-cipher.js';
import { ensurePrivateFile } from './private-files.js';
import type { Log } from '../logging.js';

/** The key that seals env values at rest, and where it came from (for messages, never the key). */
export interface EnvKey {
  key: Buffer;
  from: string;
}

export interface EnvKeyOptions {
  /** `store.envKey` (`SVC_STORE_ENV_KEY`): base64 of 32 bytes, e.g. from a Kubernetes Secret. */
  configured?: string | undefined;
  /** Without a configured key: `<dataDir>/env.key`, made on first start. */
  dataDir: string;
  log?: Log | undefined;
}

/** The key file's name in the data dir; a backup needs it to restore env values. */
export const ENV_KEY_FILE = 'env.key';

/**
 * The configured key, else the data dir's key file, else (only for a database that holds no
 * sealed value yet: `needed` false) a new key file. A missing key for sealed values stops the
 * start: a fresh key could never open them.
 */
export function loadEnvKey(opts: EnvKeyOptions, needed: boolean): EnvKey {
  if (opts.configured !== undefined && opts.configured !== '') {
    return { key: decode(opts.configured, 'store.envKey'), from: 'store.envKey' };
  }
  const path = join(opts.dataDir, ENV_KEY_FILE);
  if (existsSync(path)) {
    ensurePrivateFile(path, opts.log);
    return { key: decode(readFileSync(path, 'utf8'), path), from: path };
  }
  if (needed) {
    throw new ConfigError(
      `store: the database holds encrypted env values but their key is missing: restore ${path} ` +
        'from the backup it was taken with (or set store.envKey / SVC_STORE_ENV_KEY)',
    );
  }
  const key = randomBytes(ENV_KEY_BYTES);
  writeFileSync(path, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  return { key, from: path };
}

function decode(text: string, where: string): Buffer {
  const trimmed = text.trim();
  const key = Buffer.from(trimmed, 'base64');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed) || key.length !== ENV_KEY_BYTES) {
    throw new ConfigError(`store: ${where} must hold ${ENV_KEY_BYTES} bytes, base64-encoded`);
  }
  return key;
}
