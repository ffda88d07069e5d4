import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/persistence/sqlite-store.js';
import type { Store } from '../../src/persistence/store.js';
import { app, tempDir } from './fixtures.js';

describe('app summaries kept between reads (sqlite store)', () => {
  let tmp: ReturnType<typeof tempDir>;
  let file: string;
  let store: Store;
  beforeEach(() => {
    tmp = tempDir();
    file = join(tmp.dir, 'slipway.db');
    store = openSqliteStore(file);
  });
  afterEach(() => {
    store.close();
    tmp.cleanup();
  });

  /** Changes the row behind the store's back: only a read that reaches the database sees it. */
  const rewriteBehind = (id: string, message: string): void => {
    const db = new Database(file);
    try {
      db.prepare('UPDATE apps SET message = ? WHERE id = ?').run(message, id);
    } finally {
      db.close();
    }
  };

  it('answers a second read without the database', () => {
    store.putApp(app('web', { message: 'first' }));
    expect(store.getAppSummary('web')?.message).toBe('first');
    rewriteBehind('web', 'behind');
    expect(store.getAppSummary('web')?.message).toBe('first');
  });

  it('reads the row again once the app is written or deleted', () => {
    store.putApp(app('web', { message: 'first', env: [{ name: 'A', value: 'secret-a' }] }));
    expect(store.getAppSummary('web')?.message).toBe('first');
    store.putApp(app('web', { message: 'second', env: [{ name: 'B', value: 'secret-b' }] }));
    expect(store.getAppSummary('web')).toMatchObject({ message: 'second', env: [{ name: 'B' }] });
    expect(JSON.stringify(store.getAppSummary('web'))).not.toContain('secret');
    store.deleteApp('web');
    expect(store.getAppSummary('web')).toBeUndefined();
  });

  it('forgets what a failed transaction wrote, even when it was read inside it', () => {
    store.putApp(app('web', { message: 'kept', ownerId: 'alice' }));
    expect(store.getAppSummary('web')?.ownerId).toBe('alice');
    expect(() =>
      store.transaction(() => {
        store.putApp(app('web', { message: 'rolled back', ownerId: 'mallory' }));
        expect(store.getAppSummary('web')?.ownerId).toBe('mallory');
        throw new Error('abort');
      }),
    ).toThrow('abort');
    expect(store.getAppSummary('web')).toMatchObject({ message: 'kept', ownerId: 'alice' });
  });

  it('hands out a summary no caller can change for the next one', () => {
    store.putApp(app('web', { lastDeploy: { version: 1, outcome: 'Ready' } }));
    const first = store.getAppSummary('web');
    expect(() => {
      (first as { phase: string }).phase = 'Failed';
    }).toThrow(TypeError);
    expect(() => {
      (first?.lastDeploy as { outcome: string }).outcome = 'Failed';
    }).toThrow(TypeError);
    expect(store.getAppSummary('web')).toMatchObject({ lastDeploy: { outcome: 'Ready' } });
  });
});
