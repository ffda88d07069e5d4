import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { AppError } from '../../src/errors.js';
import { guardStore } from '../../src/persistence/guarded-store.js';
import { openSqliteStore } from '../../src/persistence/sqlite-store.js';
import { isStorageFault } from '../../src/persistence/storage-faults.js';
import { databaseProbe, StorageHealth } from '../../src/persistence/storage-health.js';
import type { Store } from '../../src/persistence/store.js';
import { WriteRetry } from '../../src/persistence/write-retry.js';
import { probeDirectory } from '../../src/sources/dir-probe.js';
import { fillDisk, mountTmpfs } from '../support/disk.js';
import { app, audit, tempDir, version } from './fixtures.js';

/**
 * A real SQLite file on a real 2 MB tmpfs, filled until the disk refuses: what a full data disk
 * does to the store, and how the guard, the health state and the retries answer it.
 */
const { dir: base, cleanup } = tempDir();
const disk = join(base, 'disk');
let unmount: () => void;

beforeAll(() => {
  unmount = mountTmpfs(disk, '2m');
});
afterAll(() => {
  unmount();
  cleanup();
});

const fill = (): { free: () => void } => fillDisk(disk);

describe('storage faults on a full disk', () => {
  let raw: Store;
  let health: StorageHealth;
  let store: Store;

  afterEach(() => {
    health.stop();
    raw.close();
    rmSync(join(disk, 'db'), { recursive: true, force: true });
  });

  function open(): void {
    raw = openSqliteStore(join(disk, 'db', 'slipway.db'));
    health = new StorageHealth({
      probes: {
        database: databaseProbe(raw),
        'source store': () => probeDirectory(disk),
      },
      probeEveryMs: 50,
    });
    store = guardStore(raw, health);
  }

  it('answers a write the disk refuses with 503 storage_unavailable, writes nothing, and recovers', async () => {
    open();
    store.putApp(app('before'));
    const full = fill();
    let refused: unknown;
    // WAL pages already on disk can take a few small writes; a run of them cannot all fit.
    for (let i = 0; i < 200 && refused === undefined; i++) {
      try {
        store.transaction(() => {
          store.putApp(app(`a${i}`, { message: 'x'.repeat(8_000) }));
          store.addVersion(version(`a${i}`, 1));
        });
      } catch (err) {
        refused = err;
      }
    }
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({
      status: 503,
      code: 'storage_unavailable',
      details: { store: 'database', retryAfterSeconds: 5 },
    });
    expect((refused as AppError).message).toMatch(/^the database cannot write: the disk is full/);
    expect(health.check('database').ok).toBe(false);
    expect(() => health.assertWritable()).toThrow(/database cannot write/);
    // The refused transaction left nothing: no app row without its version.
    for (const row of raw.listApps({}).items) {
      if (row.id !== 'before') expect(raw.getVersion(row.id, 1)).toBeDefined();
    }

    const recovered = vi.fn();
    health.onRecovered(recovered);
    full.free();
    await vi.waitFor(() => expect(recovered).toHaveBeenCalled(), { timeout: 2_000 });
    expect(health.check('database')).toEqual({ ok: true });
    expect(() => health.assertWritable()).not.toThrow();
    store.putApp(app('after'));
    expect(raw.getApp('after')).toBeDefined();
  });

  it('syncs what was committed on a full disk, where a synced commit is refused', () => {
    open();
    store.unsynced(() => store.putApp(app('unsynced')));
    const full = fill();
    try {
      let refused: unknown;
      for (let i = 0; i < 200 && refused === undefined; i++) {
        try {
          store.putApp(app(`s${i}`, { message: 'x'.repeat(8_000) }));
        } catch (err) {
          refused = err;
        }
      }
      expect(refused).toMatchObject({ status: 503, code: 'storage_unavailable' });
      expect(() => store.syncWritten()).not.toThrow();
    } finally {
      full.free();
    }
    raw.close();
    raw = openSqliteStore(join(disk, 'db', 'slipway.db'));
    expect(raw.getApp('unsynced')).toBeDefined();
  });

  it('has the database probe refused by a full disk, as a change is, and taken once it has room', async () => {
    open();
    const probe = databaseProbe(raw);
    probe();
    const first = raw.getMeta('write_probe');
    expect(first).toMatch(/^\d{4}-\d\d-\d\dT/);
    const full = fill();
    let refused: unknown;
    try {
      // The probe is one small row: WAL pages already on disk take some, and a change fills them.
      for (let i = 0; i < 200 && refused === undefined; i++) {
        try {
          probe();
          raw.putApp(app(`p${i}`, { message: 'x'.repeat(8_000) }));
        } catch (err) {
          refused = err;
        }
      }
      expect(isStorageFault(refused)).toBe(true);
      expect(() => probe()).toThrow(/SQLITE_FULL|full/i);
      const until = Date.now() + 60;
      while (Date.now() < until);
      expect(health.check('database').ok).toBe(false);
    } finally {
      full.free();
    }
    await vi.waitFor(() => expect(health.check('database')).toEqual({ ok: true }), {
      timeout: 2_000,
    });
    expect(raw.getMeta('write_probe')).not.toBe(first);
  });

  it('reports the source store down while its directory cannot take a write', () => {
    open();
    expect(health.check('source store')).toEqual({ ok: true });
    const full = fill();
    try {
      // The probe is trusted for probeEveryMs; wait that long so the next check probes again.
      const until = Date.now() + 60;
      while (Date.now() < until);
      const status = health.check('source store');
      expect(status.ok).toBe(false);
      expect(status.detail).toMatch(/^the source store cannot write: the disk is full/);
    } finally {
      full.free();
    }
  });

  it('retries a refused write until it lands, at once when storage recovers', async () => {
    open();
    const retry = new WriteRetry({ log: () => undefined, health, minDelayMs: 10_000 });
    const full = fill();
    // Audit events are what a full disk must not lose; write until the disk refuses one.
    for (let i = 0; i < 200 && retry.size === 0; i++) {
      retry.run(`audit:${i}`, () => store.appendAudit(audit(`e${i}`, new Date().toISOString())));
    }
    expect(retry.size).toBeGreaterThan(0);
    const waiting = retry.size;
    full.free();
    // The retry delay is 10 s: only the recovery can have flushed it this soon.
    await vi.waitFor(() => expect(retry.size).toBe(0), { timeout: 3_000 });
    expect(raw.listAudit({ limit: 1_000 }).length).toBeGreaterThanOrEqual(waiting);
    retry.stop();
  });
});

describe('isStorageFault', () => {
  it('knows full, read-only and failing disks from everything else', () => {
    for (const code of ['ENOSPC', 'EROFS', 'EDQUOT', 'EIO', 'SQLITE_FULL', 'SQLITE_IOERR_WRITE']) {
      expect(isStorageFault(Object.assign(new Error(code), { code }))).toBe(true);
    }
    for (const code of ['ENOENT', 'SQLITE_CONSTRAINT_PRIMARYKEY', undefined]) {
      expect(isStorageFault(Object.assign(new Error('x'), { code }))).toBe(false);
    }
  });
});

describe('WriteRetry', () => {
  it('keeps only the newest write under one key, and drops it once it lands', async () => {
    const written: string[] = [];
    let failing = true;
    const retry = new WriteRetry({ log: () => undefined, minDelayMs: 5 });
    const write = (value: string) => () => {
      if (failing) throw new Error('refused');
      written.push(value);
    };
    expect(retry.run('row', write('one'))).toBe(false);
    expect(retry.run('row', write('two'))).toBe(false);
    expect(retry.waiting('row')).toBe(true);
    failing = false;
    await vi.waitFor(() => expect(retry.waiting('row')).toBe(false));
    expect(written).toEqual(['two']);
    expect(retry.run('row', write('three'))).toBe(true);
    expect(written).toEqual(['two', 'three']);
  });

  it('leaves no probe file behind', () => {
    const before = readdirSync(disk);
    probeDirectory(disk);
    expect(readdirSync(disk)).toEqual(before);
  });
});
