import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrate, migrations } from '../../src/persistence/migrations.js';
import { openStore } from '../../src/persistence/open-store.js';
import { openSqliteStore } from '../../src/persistence/sqlite-store.js';
import { app, audit, link, tempDir, user, version } from './fixtures.js';

describe('sqlite store on a real file', () => {
  let tmp: ReturnType<typeof tempDir>;
  let file: string;
  beforeEach(() => {
    tmp = tempDir();
    file = join(tmp.dir, 'nested', 'dir', 'slipway.db');
  });
  afterEach(() => tmp.cleanup());

  /** A second, raw connection: what an operator's sqlite3 shell would see. */
  const raw = (): Database.Database => new Database(file);

  it('creates the parent directory and keeps every record across close and reopen', () => {
    const first = openSqliteStore(file);
    first.putApp(app('web', { snapshot: '{"v":1}' }));
    first.addVersion(version('web', 1));
    first.addShareLink(link('tok', 'web', { passwordHash: 'scrypt$a$b' }));
    first.putUser(user('bob', { apiKeyHash: 'h' }));
    first.appendAudit(audit('e1', '2025-01-01T00:00:01.000Z'));
    first.setMeta('k', 'v');
    first.close();
    expect(existsSync(file)).toBe(true);

    const second = openSqliteStore(file);
    try {
      expect(second.getApp('web')).toEqual(app('web', { snapshot: '{"v":1}' }));
      expect(second.listVersions('web')).toEqual([version('web', 1)]);
      expect(second.listShareLinks('web')).toEqual([
        link('tok', 'web', { passwordHash: 'scrypt$a$b' }),
      ]);
      expect(second.findUserByKeyHash('h')?.id).toBe('bob');
      expect(second.listAudit({ limit: 10 }).map((e) => e.id)).toEqual(['e1']);
      expect(second.getMeta('k')).toBe('v');
    } finally {
      second.close();
    }
  });

  it('commits unsynced writes at once, keeps them across a reopen, and goes on after one throws', () => {
    const store = openSqliteStore(file);
    expect(store.unsynced(() => (store.putApp(app('quick')), 'done'))).toBe('done');
    // Committed, not held: another connection sees it before anything else is written.
    const other = raw();
    expect(other.prepare('SELECT id FROM apps').all()).toEqual([{ id: 'quick' }]);
    other.close();
    expect(() =>
      store.unsynced(() => {
        store.setMeta('k', 'v');
        throw new Error('midway');
      }),
    ).toThrow('midway');
    store.putApp(app('after'));
    store.close();
    const again = openSqliteStore(file);
    try {
      expect(again.getApp('quick')).toEqual(app('quick'));
      expect(again.getApp('after')).toEqual(app('after'));
      expect(again.getMeta('k')).toBe('v');
    } finally {
      again.close();
    }
  });

  it('runs in WAL mode, with every migration applied once', () => {
    openSqliteStore(file).close();
    const reopened = openSqliteStore(file);
    reopened.setMeta('k', 'v');
    const db = raw();
    try {
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(db.pragma('user_version', { simple: true })).toBe(migrations.length);
      expect(migrations.length).toBeGreaterThan(0);
      const tables = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .pluck()
        .all();
      expect(tables).toEqual(
        expect.arrayContaining([
          'apps',
          'versions',
          'users',
          'departments',
          'share_links',
          'audit_events',
          'meta',
        ]),
      );
    } finally {
      db.close();
      reopened.close();
    }
  });

  it('indexes the key-hash lookup', () => {
    openSqliteStore(file).close();
    const db = raw();
    try {
      const plan = db
        .prepare('EXPLAIN QUERY PLAN SELECT * FROM users WHERE api_key_hash = ?')
        .all('h') as { detail: string }[];
      expect(plan.map((p) => p.detail).join(' ')).toMatch(/USING INDEX users_api_key_hash/);
    } finally {
      db.close();
    }
  });

  it('refuses a database written by a newer schema and leaves it untouched', () => {
    openSqliteStore(file).close();
    const db = raw();
    db.pragma(`user_version = ${migrations.length + 1}`);
    db.close();
    expect(() => openSqliteStore(file)).toThrow(/newer than this Slipway supports/);
    const check = raw();
    try {
      expect(check.pragma('user_version', { simple: true })).toBe(migrations.length + 1);
    } finally {
      check.close();
    }
  });

  it("migrates a database of the first schema: old versions take their app's metadata", () => {
    mkdirSync(dirname(file), { recursive: true });
    const db = raw();
    migrate(db, file, migrations.slice(0, 1));
    const appCols =
      "('web', 'web', 'alice', 'Ready', 'Running', '', 'fast', 'node', " +
      `'[{"name":"COLOR","value":"red"}]', '["a.example.com"]', '5m', 2, 't', 't')`;
    db.exec(
      'INSERT INTO apps (id, name, owner_id, phase, reason, message, lane, template, env, ' +
        `allowed_hosts, ttl, current_version, created_at, last_deployed_at) VALUES ${appCols}`,
    );
    for (const n of [1, 2]) {
      db.prepare(
        'INSERT INTO versions (app_id, version, timestamp, template, lane, source_hash, source_key) ' +
          "VALUES ('web', ?, 't', 'node', 'fast', 'sha256:x', ?)",
      ).run(n, `web.v${n}.${'0'.repeat(32)}`);
    }
    db.close();
    const store = openSqliteStore(file);
    try {
      const metadata = {
        env: [{ name: 'COLOR', value: 'red' }],
        allowedHosts: ['a.example.com'],
        ttl: '5m',
      };
      expect(store.getVersion('web', 2)).toMatchObject({ ...metadata, outcome: 'Ready' });
      expect(store.getVersion('web', 1)).toMatchObject(metadata);
      expect(store.getVersion('web', 1)).not.toHaveProperty('outcome');
      expect(store.getApp('web')?.liveVersion).toBe(2);
      // Apps from before the access setting stay public: no value, read as public.
      expect(store.getApp('web')).not.toHaveProperty('access');
    } finally {
      store.close();
    }
  });

  it('rolls a failing migration step back, keeping the previous version', () => {
    openSqliteStore(file).close();
    const db = raw();
    try {
      const broken = [
        ...migrations,
        { description: 'half-broken', sql: 'CREATE TABLE extra (x TEXT); SELECT * FROM missing;' },
      ];
      expect(() => migrate(db, file, broken)).toThrow(/missing/);
      expect(db.pragma('user_version', { simple: true })).toBe(migrations.length);
      const extra = db
        .prepare("SELECT count(*) FROM sqlite_master WHERE name = 'extra'")
        .pluck()
        .get();
      expect(extra).toBe(0);
    } finally {
      db.close();
    }
  });

  it('makes the audit trail append-only even through raw SQL', () => {
    const store = openSqliteStore(file);
    store.appendAudit(audit('e1', '2025-01-01T00:00:01.000Z'));
    store.close();
    const db = raw();
    try {
      expect(() => db.prepare("UPDATE audit_events SET outcome = 'forged'").run()).toThrow(
        /append-only/,
      );
      expect(() => db.prepare('DELETE FROM audit_events').run()).toThrow(/append-only/);
      expect(db.prepare('SELECT outcome FROM audit_events').pluck().all()).toEqual(['ok']);
    } finally {
      db.close();
    }
  });
});

describe('openStore', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => {
    tmp = tempDir();
  });
  afterEach(() => tmp.cleanup());

  it('defaults the sqlite file to <dataDir>/slipway.db', async () => {
    const store = await openStore({ backend: 'sqlite', dataDir: tmp.dir });
    store.close();
    expect(store.backend).toBe('sqlite');
    expect(existsSync(join(tmp.dir, 'slipway.db'))).toBe(true);
  });

  it('uses an explicit path and treats an empty one as unset', async () => {
    const custom = join(tmp.dir, 'custom', 'store.db');
    (await openStore({ backend: 'sqlite', path: custom, dataDir: tmp.dir })).close();
    expect(existsSync(custom)).toBe(true);
    expect(existsSync(join(tmp.dir, 'slipway.db'))).toBe(false);
    (await openStore({ backend: 'sqlite', path: '', dataDir: tmp.dir })).close();
    expect(existsSync(join(tmp.dir, 'slipway.db'))).toBe(true);
  });

  it('opens the memory backend without touching the disk', async () => {
    const store = await openStore({ backend: 'memory', dataDir: join(tmp.dir, 'unused') });
    expect(store.backend).toBe('memory');
    expect(existsSync(join(tmp.dir, 'unused'))).toBe(false);
    store.close();
  });

  it('refuses the configmap backend without the kubernetes settings', async () => {
    await expect(openStore({ backend: 'configmap', dataDir: tmp.dir })).rejects.toThrow(
      /needs `kubernetes`/,
    );
  });
});
