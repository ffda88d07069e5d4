import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { LOCK_FILE, lockDataDir } from '../persistence/data-dir-lock.js';
import { unpackArchive } from './unpack-archive.js';
import { DATABASE, ENV_KEY, MANIFEST, parseManifest, type Manifest } from './layout.js';

export interface RestoreOptions {
  file: string;
  dataDir: string;
  /** Where the database goes: `store.path`, else `<dataDir>/slipway.db`. */
  databasePath: string;
  /** Restore into a data dir that already holds something, replacing its database. */
  force?: boolean;
}

/** A restore that was refused before anything in the data dir changed. */
export class RestoreRefused extends Error {
  override name = 'RestoreRefused';
}

/**
 * Restores an archive of `createBackup` into `dataDir`, with the server stopped. Refuses a data
 * dir that holds anything (unless `force`), an archive that is not a Slipway backup, and any entry
 * that is not one of the archive's own (no links, no paths outside). Everything is unpacked and
 * checked beside the data dir first; the database is moved into place last.
 */
export async function restoreBackup(opts: RestoreOptions): Promise<Manifest> {
  mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  // A stopped server leaves its lock file; the lock itself is taken below.
  const present = readdirSync(opts.dataDir).filter(
    (name) => name !== 'lost+found' && name !== LOCK_FILE,
  );
  if (present.length > 0 && opts.force !== true) {
    throw new RestoreRefused(
      `${opts.dataDir} is not empty (${present.slice(0, 5).join(', ')}${present.length > 5 ? ', …' : ''}): ` +
        'restore into an empty data dir, or pass --force to replace its database (stop the server first)',
    );
  }
  // Refused while a server runs on the data dir (DataDirLocked), and none starts meanwhile.
  const lock = await lockDataDir(opts.dataDir);
  const work = join(opts.dataDir, `.restore-${randomBytes(6).toString('hex')}`);
  mkdirSync(work, { mode: 0o700 });
  try {
    const refused = await unpackArchive(opts.file, work);
    if (refused.length > 0) {
      throw new RestoreRefused(`${opts.file} holds entries no backup has: ${refused.join(', ')}`);
    }
    if (!existsSync(join(work, MANIFEST))) {
      throw new RestoreRefused(`${opts.file} is not a Slipway backup: it has no ${MANIFEST}`);
    }
    const manifest = parseManifest(readFileSync(join(work, MANIFEST), 'utf8'));
    checkDatabase(join(work, DATABASE));
    for (const folder of ['sources', 'artifacts']) {
      const from = join(work, folder);
      if (!existsSync(from)) continue;
      const to = join(opts.dataDir, folder);
      mkdirSync(to, { recursive: true, mode: 0o700 });
      for (const name of readdirSync(from)) renameSync(join(from, name), join(to, name));
    }
    if (existsSync(join(work, ENV_KEY))) {
      chmodSync(join(work, ENV_KEY), 0o600);
      renameSync(join(work, ENV_KEY), join(opts.dataDir, ENV_KEY));
    }
    mkdirSync(dirname(opts.databasePath), { recursive: true, mode: 0o700 });
    for (const side of ['-wal', '-shm']) rmSync(`${opts.databasePath}${side}`, { force: true });
    moveFile(join(work, DATABASE), opts.databasePath);
    return manifest;
  } finally {
    rmSync(work, { recursive: true, force: true });
    await lock.release();
  }
}

function checkDatabase(path: string): void {
  if (!existsSync(path)) throw new RestoreRefused(`the backup holds no ${DATABASE}`);
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const result = db.pragma('integrity_check(1)', { simple: true });
    if (result !== 'ok')
      throw new RestoreRefused(`the backup's database is damaged: ${String(result)}`);
  } finally {
    db.close();
  }
}

/** A rename, or a copy where `store.path` is on another file system than the data dir. */
function moveFile(from: string, to: string): void {
  try {
    renameSync(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
    copyFileSync(from, to);
    rmSync(from);
  }
}
