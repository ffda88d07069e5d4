import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  copyFileSync,
  fsyncSync,
  openSync,
  createWriteStream,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import Database from 'better-sqlite3';
import { isArtifactKey } from '../runtime/local/artifact-store.js';
import { isSourceKey } from '../sources/keys.js';
import { DATABASE, ENV_KEY, FORMAT, FORMAT_VERSION, MANIFEST, type Manifest } from './layout.js';
import { packPaths } from '../io/pack-paths.js';

export interface BackupOptions {
  /** The live SQLite file (the server may be running on it). */
  databasePath: string;
  dataDir: string;
  sourcesBackend: 'served' | 's3';
  /** The archive to write (a gzipped tar, mode 0600); replaced only once complete. */
  file: string;
}

/**
 * Writes one archive of a consistent snapshot while the server runs: every blob is held (hard
 * links under the data dir, so a delete meanwhile cannot take it) before SQLite's online backup
 * copies the database, so each version in the snapshot finds its blob; blobs written after are
 * picked up in a second look, and those the snapshot does not point to are left out.
 */
export async function createBackup(opts: BackupOptions): Promise<Manifest> {
  const work = join(opts.dataDir, `.backup-${randomBytes(6).toString('hex')}`);
  mkdirSync(work, { mode: 0o700 });
  try {
    const sourcesDir = join(opts.dataDir, 'sources');
    const served = opts.sourcesBackend === 'served';
    if (served) holdBlobs(sourcesDir, join(work, 'sources'), () => true);
    const snapshot = join(work, DATABASE);
    await onlineBackup(opts.databasePath, snapshot);
    const referenced = sourceKeysOf(snapshot);
    const missingSources: string[] = [];
    if (served) {
      holdBlobs(sourcesDir, join(work, 'sources'), (key) => referenced.has(key));
      for (const name of readdirSync(join(work, 'sources'))) {
        if (!referenced.has(keyOf(name))) rmSync(join(work, 'sources', name));
      }
      const held = new Set(readdirSync(join(work, 'sources')).map(keyOf));
      missingSources.push(...[...referenced].filter((key) => !held.has(key)).sort());
    }
    const apps = appIdsOf(snapshot);
    holdBlobs(join(opts.dataDir, 'artifacts'), join(work, 'artifacts'), (key) =>
      apps.has(key.slice(0, key.indexOf('.'))),
    );
    const envKey = existsSync(join(opts.dataDir, ENV_KEY));
    if (envKey) copyFileSync(join(opts.dataDir, ENV_KEY), join(work, ENV_KEY));
    const manifest: Manifest = {
      format: FORMAT,
      version: FORMAT_VERSION,
      createdAt: new Date().toISOString(),
      sourcesBackend: opts.sourcesBackend,
      sources: served ? referenced.size - missingSources.length : 0,
      artifacts: readdirSync(join(work, 'artifacts')).length,
      envKey,
      missingSources,
    };
    writeFileSync(join(work, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
    await writeArchive(work, opts.file);
    return manifest;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** SQLite's online backup API: a consistent copy while the server keeps writing. */
async function onlineBackup(from: string, to: string): Promise<void> {
  const db = new Database(from, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    await db.backup(to);
  } finally {
    db.close();
  }
  chmodSync(to, 0o600);
}

const sourceKeysOf = (snapshot: string): Set<string> =>
  column(snapshot, 'SELECT DISTINCT source_key FROM versions');

const appIdsOf = (snapshot: string): Set<string> => column(snapshot, 'SELECT id FROM apps');

function column(snapshot: string, sql: string): Set<string> {
  const db = new Database(snapshot, { readonly: true, fileMustExist: true });
  try {
    return new Set(db.prepare(sql).pluck().all() as string[]);
  } finally {
    db.close();
  }
}

const keyOf = (name: string): string => name.slice(0, -'.tar.gz'.length);

/** Hard-links (or copies, across file systems) the blobs of `from` that `wanted` into `to`. */
function holdBlobs(from: string, to: string, wanted: (key: string) => boolean): void {
  mkdirSync(to, { recursive: true, mode: 0o700 });
  if (!existsSync(from)) return;
  for (const name of readdirSync(from)) {
    if (!name.endsWith('.tar.gz')) continue;
    const key = keyOf(name);
    const valid = basename(from) === 'sources' ? isSourceKey(key) : isArtifactKey(key);
    if (!valid || !wanted(key) || existsSync(join(to, name))) continue;
    try {
      linkSync(join(from, name), join(to, name));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // Removed since the listing (a delete, an eviction): not in the snapshot's world either.
      if (code === 'ENOENT') continue;
      if (code !== 'EXDEV' && code !== 'EPERM') throw err;
      copyFileSync(join(from, name), join(to, name));
    }
  }
}

/** Packs `work` into `file` through a 0600 temp file beside it, renamed over it when complete. */
async function writeArchive(work: string, file: string): Promise<void> {
  const temp = join(dirname(file), `.${basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  const entries = [
    MANIFEST,
    DATABASE,
    ...(existsSync(join(work, ENV_KEY)) ? [ENV_KEY] : []),
    ...readdirSync(join(work, 'sources')).map((name) => `sources/${name}`),
    ...readdirSync(join(work, 'artifacts')).map((name) => `artifacts/${name}`),
  ];
  try {
    await pipeline(packPaths(work, entries), createWriteStream(temp, { flags: 'wx', mode: 0o600 }));
    chmodSync(temp, 0o600);
    syncFile(temp);
    renameSync(temp, file);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
}

function syncFile(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
