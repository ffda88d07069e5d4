/**
 * One server per data dir (data-dir-lock.ts): a second is refused, a sweeper passing through a
 * killed server's data dir never holds one, and a start waits out such a sweeper.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DataDirLocked,
  LOCK_FILE,
  lockDataDir,
  tryLockDataDir,
} from '../../src/persistence/data-dir-lock.js';

describe('the data dir lock', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'slipway-lock-'));
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('refuses a second server while the first runs, naming it', async () => {
    const first = await lockDataDir(dataDir);
    try {
      const second = lockDataDir(dataDir);
      await expect(second).rejects.toBeInstanceOf(DataDirLocked);
      await expect(second).rejects.toMatchObject({ holder: process.pid });
      expect(await tryLockDataDir(dataDir)).toBeUndefined();
    } finally {
      await first.release();
    }
    const next = await lockDataDir(dataDir);
    await next.release();
  });

  it('lets a start wait for a sweep of the killed server’s leftovers, however long it takes', async () => {
    // The lock file names the killed server; another instance's start holds the lock to sweep.
    writeFileSync(join(dataDir, LOCK_FILE), '999999999\n');
    const sweeper = await tryLockDataDir(dataDir);
    expect(sweeper).toBeDefined();
    // Longer than the second a start waits for a server that is just letting go.
    const slowSweep = setTimeout(() => void sweeper?.release(), 1_500);
    try {
      const start = await lockDataDir(dataDir);
      await start.release();
    } finally {
      clearTimeout(slowSweep);
      await sweeper?.release();
    }
  });
});
