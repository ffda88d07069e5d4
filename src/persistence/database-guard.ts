import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';

/** The SQLite codes that mean the file is not a database Slipway can trust, as opposed to a full disk. */
const DAMAGED = ['SQLITE_NOTADB', 'SQLITE_CORRUPT'];

/** What the operator runs to bring a database back: named in every refusal. */
export const RESTORE_COMMAND = 'npm run restore -- <backup archive>';

/**
 * A database Slipway refuses to start on: missing or empty while the data dir holds what only a
 * database points to, or damaged. Starting anyway would show an empty platform and let the orphan
 * sweep take every source blob, which is what a restore needs.
 */
export class DatabaseRefused extends Error {
  override name = 'DatabaseRefused';
}

/**
 * Refuses a database file that is missing or empty while `dataDir` holds source blobs or
 * artifacts, or that SQLite finds malformed. An empty data dir passes: a first start creates it.
 */
export function checkDatabaseFile(path: string, dataDir: string): void {
  const size = existsSync(path) ? statSync(path).size : undefined;
  if (size === undefined || size === 0) {
    const held = heldData(dataDir);
    if (held.length === 0) return;
    throw new DatabaseRefused(
      `the database ${path} is ${size === undefined ? 'missing' : 'empty (0 bytes)'}, but ` +
        `${dataDir} holds ${held.join(' and ')}: the database was lost, not never created. ` +
        `Refusing to start as an empty platform. Restore it from a backup with the server ` +
        `stopped: ${RESTORE_COMMAND} (see the README's "Backup and restore").`,
    );
  }
  let db: Database.Database | undefined;
  try {
    db = new Database(path, { fileMustExist: true });
    const result = db.pragma('quick_check(1)', { simple: true });
    if (result !== 'ok') throw Object.assign(new Error(String(result)), { code: 'SQLITE_CORRUPT' });
  } catch (err) {
    throw damaged(path, err);
  } finally {
    db?.close();
  }
}

/** `err` from opening the database at `path`, worded for the operator when the file is damaged. */
export function damaged(path: string, err: unknown): unknown {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string' || !DAMAGED.some((c) => code === c || code.startsWith(`${c}_`))) {
    return err;
  }
  const reason = err instanceof Error ? err.message : String(err);
  return new DatabaseRefused(
    `the database ${path} is damaged: SQLite says "${reason}" (${code}). Refusing to start. ` +
      `Keep the file for inspection, then restore a backup with the server stopped: ` +
      `${RESTORE_COMMAND} (see the README's "Backup and restore").`,
    { cause: err },
  );
}

/** What in `dataDir` only a database points to: source blobs and built artifacts, counted. */
function heldData(dataDir: string): string[] {
  const held: string[] = [];
  for (const [folder, what] of [
    ['sources', 'source blob'],
    ['artifacts', 'artifact'],
    ['quarantine', 'quarantined source blob'],
  ] as const) {
    const count = blobsIn(join(dataDir, folder));
    if (count > 0) held.push(`${count} ${what}${count === 1 ? '' : 's'} (${folder}/)`);
  }
  return held;
}

function blobsIn(dir: string): number {
  if (!existsSync(dir)) return 0;
  return readdirSync(dir).filter((name) => name.endsWith('.tar.gz') && !name.startsWith('.'))
    .length;
}
