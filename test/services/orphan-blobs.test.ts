import { existsSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/persistence/sqlite-store.js';
import type { Store } from '../../src/persistence/store.js';
import type { Log } from '../../src/services/compose.js';
import {
  ORPHAN_GRACE_MS,
  OrphanBlobSweeper,
  sweepOrphanBlobs,
} from '../../src/services/orphan-blobs.js';
import { createDiskSourceStore } from '../../src/sources/disk-source-store.js';
import { mintSourceKey } from '../../src/sources/keys.js';
import type { SourceStore } from '../../src/sources/source-store.js';
import { app, version } from '../persistence/fixtures.js';

let root: string;
let dir: string;
let store: Store;
let sources: SourceStore;
let logged: { level: string; msg: string; extra?: object }[];
const log: Log = (level, msg, extra) => logged.push({ level, msg, extra });

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'slipway-orphans-'));
  dir = join(root, 'sources');
  store = openSqliteStore(join(root, 'slipway.db'));
  sources = createDiskSourceStore(dir);
  logged = [];
  store.putApp(app('web'));
});

afterEach(() => {
  store.close();
  rmSync(root, { recursive: true, force: true });
});

const blobPath = (key: string): string => join(dir, `${key}.tar.gz`);

/** Writes a blob whose mtime is `ageMs` in the past. */
async function blob(key: string, ageMs: number, bytes = 100): Promise<string> {
  await sources.put(key, Buffer.alloc(bytes, 1));
  const at = (Date.now() - ageMs) / 1000;
  utimesSync(blobPath(key), at, at);
  return key;
}

/** Stores version `n` of web pointing at `key`, as a deploy's row commit does. */
function commit(n: number, key: string): void {
  store.addVersion(version('web', n, { sourceKey: key }));
}

const OLD = ORPHAN_GRACE_MS + 60_000;

describe('sweepOrphanBlobs', () => {
  it('removes an old unreferenced blob and keeps referenced and young ones', async () => {
    const orphan = await blob(mintSourceKey('web', 7), OLD, 300);
    const kept = await blob(mintSourceKey('web', 1), OLD);
    commit(1, kept);
    const young = await blob(mintSourceKey('web', 2), 1_000);

    const result = await sweepOrphanBlobs({ store, sourceStore: sources, log });

    expect(result).toEqual({ removed: [orphan], bytes: 300 });
    expect(existsSync(blobPath(orphan))).toBe(false);
    expect(existsSync(blobPath(kept))).toBe(true);
    expect(existsSync(blobPath(young))).toBe(true);
    expect(logged).toEqual([
      { level: 'info', msg: 'removed orphan source blobs', extra: { count: 1, bytes: 300 } },
    ]);
  });

  it('with no grace removes every unreferenced blob, and logs nothing when none is left', async () => {
    const young = await blob(mintSourceKey('web', 2), 0);
    await sweepOrphanBlobs({ store, sourceStore: sources, log, graceMs: 0, now: () => 1e15 });
    expect(existsSync(blobPath(young))).toBe(false);
    logged = [];
    const again = await sweepOrphanBlobs({ store, sourceStore: sources, log, graceMs: 0 });
    expect(again).toEqual({ removed: [], bytes: 0 });
    expect(logged).toEqual([]);
  });

  it('keeps a blob whose rows commit between the listing and its removal', async () => {
    const racing = await blob(mintSourceKey('web', 3), OLD);
    const orphan = await blob(mintSourceKey('web', 4), OLD);
    // The deploy commits right after the sweep read the referenced set, before it removes.
    const racy: Store = Object.create(store) as Store;
    racy.sourceKeys = () => {
      const keys = store.sourceKeys();
      commit(3, racing);
      return keys;
    };

    const result = await sweepOrphanBlobs({ store: racy, sourceStore: sources, log });

    expect(result.removed).toEqual([orphan]);
    expect(existsSync(blobPath(racing))).toBe(true);
  });

  it('never touches files that are not blobs', async () => {
    const strays = [
      'notes.txt',
      'web.v1.tar.gz',
      `.${mintSourceKey('web', 5)}.abcdef.tmp`,
      `${mintSourceKey('web', 6)}.tar`,
      `${mintSourceKey('web', 6).toUpperCase()}.tar.gz`,
    ];
    for (const name of strays) {
      writeFileSync(join(dir, name), 'x');
      const at = (Date.now() - OLD) / 1000;
      utimesSync(join(dir, name), at, at);
    }
    expect(await sources.list()).toEqual([]);
    expect(await sweepOrphanBlobs({ store, sourceStore: sources, log, graceMs: 0 })).toEqual({
      removed: [],
      bytes: 0,
    });
    expect(readdirSync(dir).sort()).toEqual([...strays].sort());
  });
});

describe('OrphanBlobSweeper', () => {
  it('sweeps at start, runs one sweep at a time and stops cleanly', async () => {
    const orphan = await blob(mintSourceKey('web', 8), OLD);
    const sweeper = new OrphanBlobSweeper({ store, sourceStore: sources, log });
    sweeper.start();
    const joined = sweeper.sweep();
    expect(sweeper.sweep()).toBe(joined);
    expect((await joined)?.removed).toEqual([orphan]);
    await sweeper.stop();
    expect(existsSync(blobPath(orphan))).toBe(false);
  });

  it('logs a failed sweep at warn and tries again next time', async () => {
    const orphan = await blob(mintSourceKey('web', 9), OLD);
    let fail = true;
    const flaky: SourceStore = Object.create(sources) as SourceStore;
    flaky.remove = async (key) => {
      if (fail) throw new Error('EROFS: read-only file system');
      await sources.remove(key);
    };
    const sweeper = new OrphanBlobSweeper({ store, sourceStore: flaky, log });
    expect(await sweeper.sweep()).toBeUndefined();
    expect(logged).toEqual([
      {
        level: 'warn',
        msg: 'orphan source blob sweep failed',
        extra: { err: 'EROFS: read-only file system' },
      },
    ]);
    fail = false;
    expect((await sweeper.sweep())?.removed).toEqual([orphan]);
    await sweeper.stop();
  });
});
