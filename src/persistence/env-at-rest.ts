import type { Database } from 'better-sqlite3';
import { LRUCache } from 'lru-cache';
import { ConfigError } from '../config/load.js';
import type { AppRecord, AppSummary, EnvName, VersionRecord } from './store.js';
import { envCipher, isSealed, type EnvCipher } from './env-cipher.js';
import { loadEnvKey, type EnvKeyOptions } from './env-key.js';
import {
  appFromRow,
  appSummaryFromRow,
  appToRow,
  envNamesFromJson,
  versionFromRow,
  versionToRow,
  type AppRow,
  type AppSummaryRow,
  type VersionRow,
} from './rows.js';
import type { Log } from '../logging.js';

/** Rows to and from records with the env column sealed: what the SQLite store reads and writes. */
export interface SealedRows {
  appFrom(row: AppRow): AppRecord;
  /** The app with its env names only, opened once per sealed value (then remembered). */
  summaryFrom(row: AppSummaryRow): AppSummary;
  appTo(app: AppRecord): AppRow;
  versionFrom(row: VersionRow): VersionRecord;
  versionTo(version: VersionRecord): VersionRow;
}

/**
 * Gets the env key, proves it opens every sealed env value, and seals the ones still in plaintext
 * (written before env values were encrypted), wiping their old text from the file. A key that
 * opens nothing stops the start: the values would be unreadable, and new ones would be sealed
 * under a key the old ones do not share.
 */
export function sealEnvAtRest(
  db: Database,
  path: string,
  keyOptions: EnvKeyOptions,
  log?: Log,
): SealedRows {
  const rows = envRows(db);
  const sealed = rows.filter((row) => isSealed(row.env));
  const { key, from } = loadEnvKey(keyOptions, sealed.length > 0);
  const cipher = envCipher(key);
  for (const row of sealed) {
    try {
      cipher.open(row.env);
    } catch (err) {
      throw new ConfigError(
        `store: the env values in ${path} do not open with the key from ${from}; ` +
          'start with the key they were sealed with (the env.key kept with this database)',
        { cause: err },
      );
    }
  }
  const plain = rows.filter((row) => !isSealed(row.env));
  if (plain.length > 0) {
    const update = {
      apps: db.prepare('UPDATE apps SET env = ? WHERE rowid = ?'),
      versions: db.prepare('UPDATE versions SET env = ? WHERE rowid = ?'),
    };
    db.transaction(() => {
      for (const row of plain) update[row.table].run(cipher.seal(row.env), row.id);
    })();
    // The plaintext pages leave the WAL and are overwritten (secure_delete) in the main file.
    db.pragma('wal_checkpoint(TRUNCATE)');
    log?.('info', 'env values encrypted at rest', { rows: plain.length, key: from });
  }
  return sealedRows(cipher);
}

interface EnvRow {
  table: 'apps' | 'versions';
  id: number;
  env: string;
}

function envRows(db: Database): EnvRow[] {
  const read = (table: EnvRow['table']): EnvRow[] =>
    (
      db.prepare(`SELECT rowid AS id, env FROM ${table} WHERE env IS NOT NULL`).all() as Array<{
        id: number;
        env: string;
      }>
    ).map((row) => ({ table, ...row }));
  return [...read('apps'), ...read('versions')];
}

/** Env lists whose names are remembered: enough for every app a busy dashboard lists. */
const NAMES_KEPT = 2_048;

function sealedRows(cipher: EnvCipher): SealedRows {
  // A sealed value is never rewritten in place (each seal takes a fresh nonce), so its names are
  // its names for good: a view reads them here instead of decrypting the values it never shows.
  // Only the names are kept; the values are dropped as soon as the list is opened.
  const names = new LRUCache<string, readonly EnvName[]>({ max: NAMES_KEPT });
  const namesOf = (sealed: string): EnvName[] => {
    let known = names.get(sealed);
    if (!known) {
      known = envNamesFromJson(cipher.open(sealed));
      names.set(sealed, known);
    }
    return known.map((n) => ({ name: n.name }));
  };
  return {
    appFrom: (row) => appFromRow({ ...row, env: cipher.open(row.env) }),
    summaryFrom: (row) => appSummaryFromRow(row, namesOf(row.env)),
    appTo: (app) => {
      const row = appToRow(app);
      return { ...row, env: cipher.seal(row.env) };
    },
    versionFrom: (row) =>
      versionFromRow({ ...row, env: row.env === null ? null : cipher.open(row.env) }),
    versionTo: (version) => {
      const row = versionToRow(version);
      return { ...row, env: row.env === null ? null : cipher.seal(row.env) };
    },
  };
}
