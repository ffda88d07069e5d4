import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createBackup } from '../../src/backup/create-backup.js';
import { DATABASE, FORMAT, FORMAT_VERSION, MANIFEST } from '../../src/backup/layout.js';
import { restoreBackup, RestoreRefused } from '../../src/backup/restore-backup.js';
import { DataDirLocked, lockDataDir } from '../../src/persistence/data-dir-lock.js';
import { openSqliteStore } from '../../src/persistence/sqlite-store.js';
import { mintSourceKey } from '../../src/sources/keys.js';
import { app, version } from '../persistence/fixtures.js';
import { tarGz, type TarEntries } from '../support/tarball.js';

let root: string;
let target: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'slipway-restore-'));
  target = join(root, 'target', 'data');
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const manifest = JSON.stringify({
  format: FORMAT,
  version: FORMAT_VERSION,
  createdAt: '2026-01-01T00:00:00.000Z',
  sourcesBackend: 'served',
  sources: 0,
  artifacts: 0,
  missingSources: [],
});

async function archiveOf(entries: TarEntries): Promise<string> {
  const file = join(root, `archive-${readdirSync(root).length}.tar.gz`);
  writeFileSync(file, await tarGz(entries));
  return file;
}

const restore = (file: string, force = false) =>
  restoreBackup({ file, dataDir: target, databasePath: join(target, DATABASE), force });

describe('restoreBackup', () => {
  it('round-trips what createBackup wrote: the database and the blobs it points to', async () => {
    const source = join(root, 'source', 'data');
    const store = openSqliteStore(join(source, DATABASE));
    const key = mintSourceKey('web', 1);
    store.putApp(app('web'));
    store.addVersion(version('web', 1, { sourceKey: key }));
    store.close();
    mkdirSync(join(source, 'sources'));
    writeFileSync(join(source, 'sources', `${key}.tar.gz`), 'blob bytes');
    // Left behind by a crash: nothing points to it, so the backup leaves it out.
    writeFileSync(join(source, 'sources', `${mintSourceKey('web', 2)}.tar.gz`), 'orphan');
    // The key the store made beside its database, which seals the env values.
    const envKey = readFileSync(join(source, 'env.key'), 'utf8');
    const file = join(root, 'backup.tar.gz');

    const made = await createBackup({
      databasePath: join(source, DATABASE),
      dataDir: source,
      sourcesBackend: 'served',
      file,
    });
    expect(made).toMatchObject({ sources: 1, artifacts: 0, envKey: true, missingSources: [] });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(await restore(file)).toMatchObject({ sources: 1 });

    expect(readdirSync(join(target, 'sources'))).toEqual([`${key}.tar.gz`]);
    const restored = openSqliteStore(join(target, DATABASE));
    expect(restored.getVersion('web', 1)?.sourceKey).toBe(key);
    restored.close();
    expect(readFileSync(join(target, 'env.key'), 'utf8')).toBe(envKey);
    expect(statSync(join(target, 'env.key')).mode & 0o777).toBe(0o600);
    expect(readdirSync(target).filter((name) => name.startsWith('.'))).toEqual([]);
  });

  it('refuses, even forced, while a server holds the data dir', async () => {
    const lock = await lockDataDir(target);
    try {
      const file = await archiveOf({ [MANIFEST]: manifest });
      await expect(restore(file, true)).rejects.toBeInstanceOf(DataDirLocked);
    } finally {
      await lock.release();
    }
  });

  it('refuses a data dir that is not empty, unless forced', async () => {
    mkdirSync(target, { recursive: true });
    writeFileSync(join(target, 'keep.txt'), 'x');
    const file = await archiveOf({ [MANIFEST]: manifest });
    await expect(restore(file)).rejects.toThrow(/is not empty \(keep\.txt\).*--force/);
  });

  it.each([
    ['a path outside the data dir', { [MANIFEST]: manifest, '../escaped.txt': 'x' }],
    ['a symlink', { [MANIFEST]: manifest, [DATABASE]: { type: 'symlink', target: '/etc/passwd' } }],
    ['a file no backup holds', { [MANIFEST]: manifest, 'sources/evil.sh': 'x' }],
    [
      'a file named twice',
      [
        [MANIFEST, manifest],
        [MANIFEST, 'a second manifest'],
      ],
    ],
  ] as const)('refuses an archive with %s, writing nothing', async (_, entries) => {
    const file = await archiveOf(entries as TarEntries);
    const refused = restore(file);
    await expect(refused).rejects.toBeInstanceOf(RestoreRefused);
    await expect(refused).rejects.toThrow(/holds entries no backup has: /);
    expect(existsSync(join(root, 'target', 'escaped.txt'))).toBe(false);
    expect(readdirSync(target).filter((name) => name !== 'slipway.lock')).toEqual([]);
  });

  it('refuses an archive that is not a Slipway backup', async () => {
    const file = await archiveOf({ [DATABASE]: 'not a database' });
    await expect(restore(file)).rejects.toThrow(/is not a Slipway backup: it has no manifest/);
    expect(readdirSync(target).filter((name) => name !== 'slipway.lock')).toEqual([]);
  });
});
