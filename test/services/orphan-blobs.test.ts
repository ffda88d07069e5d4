import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/persistence/sqlite-store.js';
import type { Store } from '../../src/persistence/store.js';
import { BlobQuarantine } from '../../src/services/blob-quarantine.js';
import type { Log } from '../../src/logging.js';
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
let quarantine: BlobQuarantine;
let logged: { level: string; msg: string; extra?: object }[];
const log: Log = (level, msg, extra) => logged.push({ level, msg, extra });

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'slipway-orphans-'));
  dir = join(root, 'sources');
  store = openSqliteStore(join(root, 'slipway.db'));
  sources = createDiskSourceStore(dir);
  quarantine = new BlobQuarantine(join(root, 'quarantine'));
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

/** `count` old blobs that versions 11.. point to: a store that holds most of what it should. */
async function referencedBlobs(count: number): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const key = await blob(mintSourceKey('web', 11 + i), OLD);
    commit(11 + i, key);
    keys.push(key);
  }
  return keys;
}

const sweep = (extra: { graceMs?: number; now?: () => number; store?: Store } = {}) =>
  sweepOrphanBlobs({ store, sourceStore: sources, quarantine, log, ...extra });

describe('sweepOrphanBlobs', () => {
  it('moves an old unreferenced blob to the quarantine and keeps referenced and young ones', async () => {
    await referencedBlobs(1);
    const orphan = await blob(mintSourceKey('web', 7), OLD, 300);
    const kept = await blob(mintSourceKey('web', 1), OLD);
    commit(1, kept);
    const young = await blob(mintSourceKey('web', 2), 1_000);

    const result = await sweep();

    expect(result).toEqual({ removed: [orphan], bytes: 300 });
    expect(existsSync(blobPath(orphan))).toBe(false);
    expect(readFileSync(quarantine.pathOf(orphan))).toEqual(Buffer.alloc(300, 1));
    expect(existsSync(blobPath(kept))).toBe(true);
    expect(existsSync(blobPath(young))).toBe(true);
    expect(logged).toEqual([
      {
        level: 'info',
        msg: 'moved orphan source blobs to the quarantine',
        extra: { count: 1, bytes: 300, dir: quarantine.dir },
      },
    ]);
  });

  it('with no grace takes every unreferenced blob, and logs nothing when none is left', async () => {
    await referencedBlobs(2);
    const young = await blob(mintSourceKey('web', 2), 0);
    await sweep({ graceMs: 0, now: () => 1e15 });
    expect(existsSync(blobPath(young))).toBe(false);
    logged = [];
    const again = await sweep({ graceMs: 0 });
    expect(again).toEqual({ removed: [], bytes: 0 });
    expect(logged).toEqual([]);
  });

  it('keeps a blob whose rows commit between the listing and its removal', async () => {
    await referencedBlobs(2);
    const racing = await blob(mintSourceKey('web', 3), OLD);
    const orphan = await blob(mintSourceKey('web', 4), OLD);
    // The deploy commits right after the sweep read the referenced set, before it removes.
    const racy: Store = Object.create(store) as Store;
    racy.sourceKeys = () => {
      const keys = store.sourceKeys();
      commit(3, racing);
      return keys;
    };

    const result = await sweep({ store: racy });

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
    expect(await sweep({ graceMs: 0 })).toEqual({ removed: [], bytes: 0 });
    expect(readdirSync(dir).sort()).toEqual([...strays].sort());
  });
});

describe('a store that looks reset', () => {
  it('with no version at all while blobs exist: takes nothing and logs at error', async () => {
    const blobs = [
      await blob(mintSourceKey('web', 1), OLD),
      await blob(mintSourceKey('web', 2), OLD),
      await blob(mintSourceKey('other', 1), OLD),
    ];

    const result = await sweep();

    expect(result.removed).toEqual([]);
    expect(result.refused).toMatch(/holds no version at all while the source store holds 3 blob/);
    expect(blobs.filter((key) => existsSync(blobPath(key)))).toEqual(blobs);
    expect(existsSync(quarantine.dir)).toBe(false);
    expect(logged).toEqual([
      {
        level: 'error',
        msg: `orphan source blob sweep refused: ${result.refused}`,
        extra: { blobs: 3, unreferenced: 3, versions: 0 },
      },
    ]);
  });

  it('with more than half of the blobs unreferenced: takes nothing', async () => {
    await referencedBlobs(1);
    const orphans = [
      await blob(mintSourceKey('web', 1), OLD),
      await blob(mintSourceKey('web', 2), 0),
    ];

    const result = await sweep();

    expect(result).toMatchObject({ removed: [], refused: expect.stringMatching(/2 of 3 blobs/) });
    expect(orphans.every((key) => existsSync(blobPath(key)))).toBe(true);
    expect(logged.map((entry) => entry.level)).toEqual(['error']);
  });

  it('judges nothing while the only unreferenced blobs are uploads in flight', async () => {
    const young = await blob(mintSourceKey('web', 1), 1_000);
    expect(await sweep()).toEqual({ removed: [], bytes: 0 });
    expect(existsSync(blobPath(young))).toBe(true);
    expect(logged).toEqual([]);
  });
});

describe('the quarantine', () => {
  it('keeps a swept blob byte for byte, restorable by moving it back', async () => {
    await referencedBlobs(2);
    const orphan = await blob(mintSourceKey('web', 7), OLD, 4096);
    expect((await sweep()).removed).toEqual([orphan]);
    expect(await sources.size(orphan)).toBeUndefined();

    renameSync(quarantine.pathOf(orphan), blobPath(orphan));

    const stream = await sources.open(orphan);
    const chunks: Buffer[] = [];
    for await (const chunk of stream ?? []) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks)).toEqual(Buffer.alloc(4096, 1));
  });

  it('deletes what it kept once the retention is over, not before', async () => {
    await referencedBlobs(2);
    const orphan = await blob(mintSourceKey('web', 7), OLD);
    await sweep();
    const day = 24 * 3_600_000;
    let now = Date.now() + day;
    const aged = new BlobQuarantine(quarantine.dir, 2 * day, () => now);
    expect(await aged.expire()).toEqual([]);
    expect(existsSync(aged.pathOf(orphan))).toBe(true);
    now += 2 * day;
    expect(await aged.expire()).toEqual([orphan]);
    expect(existsSync(aged.pathOf(orphan))).toBe(false);
  });
});

describe('OrphanBlobSweeper', () => {
  it('sweeps at start, runs one sweep at a time and stops cleanly', async () => {
    await referencedBlobs(2);
    const orphan = await blob(mintSourceKey('web', 8), OLD);
    const sweeper = new OrphanBlobSweeper({ store, sourceStore: sources, quarantine, log });
    sweeper.start();
    const joined = sweeper.sweep();
    expect(sweeper.sweep()).toBe(joined);
    expect((await joined)?.removed).toEqual([orphan]);
    await sweeper.stop();
    expect(existsSync(blobPath(orphan))).toBe(false);
  });

  it('logs a failed sweep at warn and tries again next time', async () => {
    await referencedBlobs(2);
    const orphan = await blob(mintSourceKey('web', 9), OLD);
    let fail = true;
    const flaky: SourceStore = Object.create(sources) as SourceStore;
    flaky.remove = async (key) => {
      if (fail) throw new Error('EROFS: read-only file system');
      await sources.remove(key);
    };
    const sweeper = new OrphanBlobSweeper({ store, sourceStore: flaky, quarantine, log });
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
