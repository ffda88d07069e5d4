import { expect, it } from 'vitest';
import type { Store } from '../../src/persistence/store.js';
import { app, department, link, user, version } from './fixtures.js';

/**
 * Whether the backend keeps share links. The spec makes share links unavailable on the configmap
 * backend: there every link case asserts the 503 `share_links_unavailable` instead.
 */
export const keepsLinks = (s: Store): boolean => s.backend !== 'configmap';

/** The configmap backend's answer to a share link: 503 share_links_unavailable, nothing stored. */
export function expectLinksRefused(s: Store, token: string, appId: string): void {
  expect(() => s.addShareLink(link(token, appId))).toThrow(
    expect.objectContaining({ status: 503, code: 'share_links_unavailable' }),
  );
  expect(s.getShareLink(token)).toBeUndefined();
  expect(s.listShareLinks(appId)).toEqual([]);
  expect(s.revokeShareLink(token, '2025-02-01T00:00:00.000Z')).toBe(false);
}

/** Contract cases for apps, versions, users, departments and share links. */
export function recordCases(store: () => Store): void {
  it('reports its backend and answers ping until closed', () => {
    const s = store();
    expect(['sqlite', 'memory', 'configmap']).toContain(s.backend);
    expect(s.ping()).toBe(true);
    s.close();
    expect(s.ping()).toBe(false);
    expect(() => s.getApp('web')).toThrow(/not open/);
  });

  it('round-trips an app, leaving unset optional fields absent', () => {
    const s = store();
    s.putApp(app('web', { url: undefined }));
    const got = s.getApp('web');
    expect(got).toEqual(app('web'));
    expect(got).not.toHaveProperty('url');
    expect(got).not.toHaveProperty('department');
    expect(got).not.toHaveProperty('snapshot');
    // A row from before apps had an access setting: absent, which every reader takes as public.
    expect(got).not.toHaveProperty('access');
    expect(s.getApp('nope')).toBeUndefined();

    const full = app('api', {
      department: 'eng',
      url: 'https://api.example.com',
      entrypoint: 'server.js',
      build: 'npx tsc',
      snapshot: '{"value":"Ready"}',
      access: 'private',
    });
    s.putApp(full);
    expect(s.getApp('api')).toEqual(full);
    s.putApp({ ...full, access: 'public' });
    expect(s.getApp('api')?.access).toBe('public');
  });

  it('putApp replaces the row in place, keeping its versions and links', () => {
    const s = store();
    s.putApp(app('web'));
    s.addVersion(version('web', 1));
    if (keepsLinks(s)) s.addShareLink(link('t1', 'web'));
    else expectLinksRefused(s, 't1', 'web');
    s.putApp(app('web', { phase: 'Suspended', currentVersion: 2, url: 'https://web.x' }));
    expect(s.getApp('web')).toMatchObject({ phase: 'Suspended', currentVersion: 2 });
    expect(s.listVersions('web')).toHaveLength(1);
    expect(s.getShareLink('t1') !== undefined).toBe(keepsLinks(s));
    s.putApp(app('web'));
    expect(s.getApp('web')).not.toHaveProperty('url');
  });

  it("putMachineState writes the machine's fields and keeps the rest of the row as stored", () => {
    const s = store();
    const env = [{ name: 'TOKEN', value: 'secret-t' }];
    s.putApp(app('web', { env, access: 'private', url: 'https://web.x', liveVersion: 1 }));
    const state = {
      phase: 'Starting',
      reason: 'Starting',
      message: 'version 2 starting',
      currentVersion: 2,
      lastDeploy: { version: 2, outcome: 'Pending' },
      snapshot: '{"value":"Starting"}',
    } as const;
    expect(s.putMachineState('web', state)).toBe(true);
    const got = s.getApp('web');
    expect(got).toEqual({ ...app('web', { env, access: 'private' }), ...state });
    // Absent machine fields are cleared, as putApp of the same record would.
    expect(got).not.toHaveProperty('url');
    expect(got).not.toHaveProperty('liveVersion');
    expect(s.getAppSummary('web')).toMatchObject({ phase: 'Starting', env: [{ name: 'TOKEN' }] });
    expect(s.putMachineState('nope', state)).toBe(false);
    expect(s.getApp('nope')).toBeUndefined();
  });

  it('refuses a second app with the same name', () => {
    const s = store();
    s.putApp(app('a', { name: 'shared' }));
    expect(() => s.putApp(app('b', { name: 'shared' }))).toThrow(/UNIQUE/);
    expect(s.getApp('b')).toBeUndefined();
  });

  it('lists apps by name with paging, owner filter and full totals', () => {
    const s = store();
    for (const [id, owner] of [
      ['c', 'bob'],
      ['a', 'alice'],
      ['e', 'alice'],
      ['b', 'bob'],
      ['d', 'alice'],
    ]) {
      s.putApp(app(id ?? '', { ownerId: owner ?? '' }));
    }
    const names = (q: Parameters<Store['listApps']>[0]) => s.listApps(q).items.map((a) => a.id);
    expect(names({})).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(names({ limit: 0 })).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(s.listApps({ limit: 2, offset: 1 })).toMatchObject({ total: 5 });
    expect(names({ limit: 2, offset: 1 })).toEqual(['b', 'c']);
    expect(names({ limit: 2, offset: 4 })).toEqual(['e']);
    expect(names({ offset: 3 })).toEqual(['d', 'e']);
    expect(s.listApps({ limit: 2, offset: 10 })).toEqual({ items: [], total: 5 });
    // Far past any table (and past what SQLite binds as an integer): an empty page, not an error.
    expect(s.listApps({ limit: 2, offset: 1.2e21 })).toEqual({ items: [], total: 5 });
    expect(s.listApps({ ownerId: 'alice', limit: 1 })).toMatchObject({ total: 3 });
    expect(names({ ownerId: 'alice', limit: 2, offset: 1 })).toEqual(['d', 'e']);
    expect(s.listApps({ ownerId: 'carol' })).toEqual({ items: [], total: 0 });
  });

  it('shows an app for a view with its env names only, the same page as listApps', () => {
    const s = store();
    const env = [
      { name: 'A', value: 'secret-a' },
      { name: 'B', value: 'secret-b' },
    ];
    s.putApp(app('web', { env, snapshot: '{"v":1}', url: 'http://web.example.com' }));
    s.putApp(app('api', { ownerId: 'bob' }));
    const shown = Object.entries(s.getApp('web') ?? {}).filter(([key]) => key !== 'snapshot');
    expect(s.getAppSummary('web')).toEqual({
      ...Object.fromEntries(shown),
      env: [{ name: 'A' }, { name: 'B' }],
    });
    expect(JSON.stringify(s.getAppSummary('web'))).not.toContain('secret');
    expect(s.getAppSummary('nope')).toBeUndefined();
    // A changed env is seen at once: names are never stale.
    s.putApp(app('web', { env: [{ name: 'C', value: 'secret-c' }] }));
    expect(s.getAppSummary('web')?.env).toEqual([{ name: 'C' }]);
    const ids = (q: Parameters<Store['listAppSummaries']>[0]) =>
      s.listAppSummaries(q).items.map((a) => a.id);
    expect(ids({})).toEqual(['api', 'web']);
    expect(s.listAppSummaries({ ownerId: 'alice' })).toEqual({
      items: [s.getAppSummary('web')],
      total: 1,
    });
    expect(s.listAppSummaries({ limit: 1, offset: 1 })).toMatchObject({ total: 2 });
    expect(ids({ limit: 1, offset: 1 })).toEqual(['web']);
  });

  it('stores versions newest first and finds one by number', () => {
    const s = store();
    s.putApp(app('web'));
    s.addVersion(version('web', 1));
    s.addVersion(
      version('web', 3, {
        rolledBackFrom: 1,
        entrypoint: 'main.js',
        build: 'make site',
        overrides: { template: 'node', entrypoint: 'main.js' },
      }),
    );
    s.addVersion(version('web', 2));
    expect(s.listVersions('web').map((v) => v.version)).toEqual([3, 2, 1]);
    expect(s.getVersion('web', 3)).toEqual(
      version('web', 3, {
        rolledBackFrom: 1,
        entrypoint: 'main.js',
        build: 'make site',
        overrides: { template: 'node', entrypoint: 'main.js' },
      }),
    );
    expect(s.getVersion('web', 1)).not.toHaveProperty('rolledBackFrom');
    expect(s.getVersion('web', 1)).not.toHaveProperty('build');
    expect(s.getVersion('web', 1)).not.toHaveProperty('overrides');
    expect(s.getVersion('web', 9)).toBeUndefined();
    expect(s.listVersions('other')).toEqual([]);
    expect(() => s.addVersion(version('web', 2))).toThrow(/UNIQUE/);
  });

  it('keeps a release: its metadata, and the outcome recorded later', () => {
    const s = store();
    s.putApp(app('web', { liveVersion: 1, lastDeploy: { version: 2, outcome: 'Pending' } }));
    expect(s.getApp('web')).toMatchObject({
      liveVersion: 1,
      lastDeploy: { version: 2, outcome: 'Pending' },
    });
    const release = version('web', 2, {
      env: [{ name: 'COLOR', value: 'blue' }],
      allowedHosts: ['api.example.com'],
      ttl: '5m',
      deployedBy: 'apikey-alice',
      outcome: 'Pending',
    });
    s.addVersion(release);
    expect(s.getVersion('web', 2)).toEqual(release);
    const failed = { outcome: 'Failed', reason: 'AppExited', message: 'code 1' } as const;
    expect(s.setVersionOutcome('web', 2, failed)).toBe(true);
    expect(s.getVersion('web', 2)).toEqual({ ...release, ...failed });
    // A later outcome without a reason leaves none behind.
    expect(s.setVersionOutcome('web', 2, { outcome: 'Ready' })).toBe(true);
    expect(s.getVersion('web', 2)).toEqual({ ...release, outcome: 'Ready' });
    expect(s.setVersionOutcome('web', 9, failed)).toBe(false);
    expect(s.setVersionOutcome('ghost', 1, failed)).toBe(false);
    expect(s.getVersion('web', 9)).toBeUndefined();
  });

  it('refuses a version or link of an app that does not exist', () => {
    const s = store();
    expect(() => s.addVersion(version('ghost', 1))).toThrow(/FOREIGN KEY/);
    if (keepsLinks(s)) expect(() => s.addShareLink(link('t', 'ghost'))).toThrow(/FOREIGN KEY/);
    else expectLinksRefused(s, 't', 'ghost');
    expect(s.listVersions('ghost')).toEqual([]);
    expect(s.getShareLink('t')).toBeUndefined();
  });

  it('prunes all but the newest versions and returns the pruned ones', () => {
    const s = store();
    s.putApp(app('web'));
    for (let n = 1; n <= 5; n++) s.addVersion(version('web', n));
    const pruned = s.pruneVersions('web', 2);
    expect(pruned.map((v) => v.version)).toEqual([3, 2, 1]);
    expect(pruned[0]).toEqual(version('web', 3));
    expect(s.listVersions('web').map((v) => v.version)).toEqual([5, 4]);
    expect(s.pruneVersions('web', 2)).toEqual([]);
    expect(s.pruneVersions('web', 0).map((v) => v.version)).toEqual([5, 4]);
    expect(s.pruneVersions('nope', 1)).toEqual([]);
  });

  it('knows which source keys its versions point to, through prunes and deletes', () => {
    const s = store();
    expect(s.sourceKeys()).toEqual(new Set());
    s.putApp(app('web'));
    s.putApp(app('api'));
    for (let n = 1; n <= 3; n++) s.addVersion(version('web', n));
    s.addVersion(version('api', 1));
    const key = (appId: string, n: number): string => version(appId, n).sourceKey;
    expect(s.sourceKeys()).toEqual(
      new Set([key('web', 1), key('web', 2), key('web', 3), key('api', 1)]),
    );
    expect(s.hasSourceKey(key('web', 2))).toBe(true);
    expect(s.hasSourceKey(key('web', 9))).toBe(false);
    s.pruneVersions('web', 1);
    s.deleteApp('api');
    expect(s.sourceKeys()).toEqual(new Set([key('web', 3)]));
    expect(s.hasSourceKey(key('web', 2))).toBe(false);
    expect(s.hasSourceKey(key('api', 1))).toBe(false);
    // A key only counts once it is committed: a rolled-back transaction leaves none behind.
    expect(() =>
      s.transaction(() => {
        s.addVersion(version('web', 4));
        throw new Error('abort');
      }),
    ).toThrow('abort');
    expect(s.hasSourceKey(key('web', 4))).toBe(false);
  });

  it('deleteApp removes the app, its versions and links, and returns the versions', () => {
    const s = store();
    s.putApp(app('web'));
    s.putApp(app('api'));
    s.addVersion(version('web', 1));
    s.addVersion(version('web', 2));
    s.addVersion(version('api', 1));
    if (keepsLinks(s)) {
      s.addShareLink(link('tw', 'web'));
      s.addShareLink(link('ta', 'api'));
    } else {
      expectLinksRefused(s, 'tw', 'web');
    }
    expect(s.deleteApp('web')).toEqual([version('web', 2), version('web', 1)]);
    expect(s.getApp('web')).toBeUndefined();
    expect(s.listVersions('web')).toEqual([]);
    expect(s.getShareLink('tw')).toBeUndefined();
    expect(s.listVersions('api')).toHaveLength(1);
    expect(s.getShareLink('ta') !== undefined).toBe(keepsLinks(s));
    expect(s.deleteApp('web')).toEqual([]);
    // A redeploy under the same name starts from a clean history.
    s.putApp(app('web'));
    expect(s.listVersions('web')).toEqual([]);
  });

  it('ensureUser inserts once and then returns the stored row', () => {
    const s = store();
    const first = s.ensureUser(user('apikey-ci', { email: 'ci@x' }));
    expect(first).toEqual(user('apikey-ci', { email: 'ci@x' }));
    const again = s.ensureUser(user('apikey-ci', { name: 'other', role: 'admin' }));
    expect(again).toEqual(first);
    expect(s.listUsers()).toHaveLength(1);
  });

  it('puts, lists, finds by key hash and deletes users', () => {
    const s = store();
    s.putUser(user('bob', { apiKeyHash: 'h-bob' }));
    s.putUser(user('alice', { department: 'eng' }));
    expect(s.listUsers().map((u) => u.id)).toEqual(['alice', 'bob']);
    expect(s.getUser('alice')).not.toHaveProperty('apiKeyHash');
    expect(s.findUserByKeyHash('h-bob')?.id).toBe('bob');
    expect(s.findUserByKeyHash('h-none')).toBeUndefined();
    expect(() => s.putUser(user('carol', { apiKeyHash: 'h-bob' }))).toThrow(/UNIQUE/);
    s.putUser(user('bob', { status: 'suspended' }));
    expect(s.getUser('bob')).toEqual(user('bob', { status: 'suspended' }));
    expect(s.findUserByKeyHash('h-bob')).toBeUndefined();
    expect(s.deleteUser('bob')).toBe(true);
    expect(s.deleteUser('bob')).toBe(false);
    expect(s.getUser('bob')).toBeUndefined();
  });

  it('puts, lists and deletes departments', () => {
    const s = store();
    s.putDepartment(department('ops', { description: 'on call' }));
    s.putDepartment(department('eng'));
    expect(s.listDepartments()).toEqual([
      department('eng'),
      department('ops', { description: 'on call' }),
    ]);
    expect(s.getDepartment('eng')).not.toHaveProperty('description');
    s.putDepartment(department('eng', { name: 'Engineering' }));
    expect(s.getDepartment('eng')?.name).toBe('Engineering');
    expect(s.deleteDepartment('eng')).toBe(true);
    expect(s.deleteDepartment('eng')).toBe(false);
    expect(s.getDepartment('eng')).toBeUndefined();
  });

  it('lists active share links newest first and hides revoked ones', () => {
    const s = store();
    s.putApp(app('web'));
    s.putApp(app('api'));
    if (!keepsLinks(s)) {
      expectLinksRefused(s, 'old', 'web');
      expect(s.getApp('web')).toEqual(app('web'));
      return;
    }
    const later = '2025-02-01T00:00:00.000Z';
    s.addShareLink(link('old', 'web', { passwordHash: 'scrypt$aa$bb', expiresIn: '1h' }));
    s.addShareLink(link('new', 'web', { createdAt: later, expiresAt: later }));
    s.addShareLink(link('tie', 'web'));
    s.addShareLink(link('other', 'api'));
    expect(s.listShareLinks('web').map((l) => l.token)).toEqual(['new', 'tie', 'old']);
    expect(s.getShareLink('old')).toEqual(
      link('old', 'web', { passwordHash: 'scrypt$aa$bb', expiresIn: '1h' }),
    );
    expect(() => s.addShareLink(link('old', 'web'))).toThrow(/UNIQUE/);

    expect(s.revokeShareLink('tie', later)).toBe(true);
    expect(s.revokeShareLink('tie', later)).toBe(false);
    expect(s.revokeShareLink('missing', later)).toBe(false);
    expect(s.listShareLinks('web').map((l) => l.token)).toEqual(['new', 'old']);
    expect(s.getShareLink('tie')?.revokedAt).toBe(later);
    expect(s.getShareLink('new')).not.toHaveProperty('revokedAt');
  });
}
