import type { Database } from 'better-sqlite3';
import { ConfigError } from '../config/load.js';
import type { AppRecord, VersionRecord } from './store.js';
import { envCipher, isSealed, type EnvCipher } from './env-cipher.js';
import { loadEnvKey, type EnvKeyOptions } from './env-key.js';
import {
  appFromRow,
  appToRow,
  versionFromRow,
  versionToRow,
  type AppRow,
  type VersionRow,
} from './rows.js';
import type { Log } from '../logging.js';

/** Rows to and from records with the env column sealed: what the SQLite store reads and writes. */
export interface SealedRows {
  appFrom(row: AppRow): AppRecord;
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

function sealedRows(cipher: EnvCipher): SealedRows {
  return {
    appFrom: (row) => appFromRow({ ...row, env: cipher.open(row.env) }),
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
