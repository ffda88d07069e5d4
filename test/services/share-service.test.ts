import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { Identity } from '../../src/auth/identity.js';
import { notFound } from '../../src/errors.js';
import { openSqliteStore } from '../../src/persistence/sqlite-store.js';
import type { Store } from '../../src/persistence/store.js';
import { AppGrants } from '../../src/services/app-grants.js';
import { ShareService } from '../../src/services/share-links.js';
import { app, tempDir } from '../persistence/fixtures.js';

const user = (userId: string, extra: Partial<Identity> = {}): Identity => ({
  userId,
  name: userId,
  role: 'user',
  scopes: [],
  mode: 'apikey',
  ...extra,
});
const ALICE = user('alice');
const NO_AUTH = user('admin', { role: 'admin', mode: 'none' });

describe('ShareService rules shared by HTTP and MCP', () => {
  let store: Store;
  let cleanup: () => void;
  let shares: ShareService;
  beforeEach(() => {
    const tmp = tempDir();
    cleanup = tmp.cleanup;
    store = openSqliteStore(join(tmp.dir, 'slipway.db'));
    store.putApp(app('demo', { ownerId: 'alice' }));
    // The app service's visibility rule: owners see their apps, admins see all.
    const apps = {
      get: (identity: Identity, id: string) => {
        const found = store.getApp(id);
        const sees = identity.role === 'admin' || found?.ownerId === identity.userId;
        if (!found || !sees) throw notFound('app');
        return found;
      },
    };
    const grants = new AppGrants(store);
    shares = new ShareService({ store, apps, grants, baseURL: () => 'https://pub.example/' });
  });
  afterEach(() => {
    store.close();
    cleanup();
  });

  it('stores only a scrypt hash of the password, and the view never carries it', async () => {
    const view = await shares.create(ALICE, 'demo', { password: 'hunter2' });
    expect(view.url).toBe(`https://pub.example/share/${view.token}`);
    const row = store.getShareLink(view.token);
    expect(row?.passwordHash).toMatch(/^scrypt\$/);
    expect(JSON.stringify(row)).not.toContain('hunter2');
    expect(JSON.stringify(view)).not.toContain('scrypt');
  });

  it('answers 404, not 500, when the app is deleted while the password is hashed', async () => {
    const pending = shares.create(ALICE, 'demo', { password: 'hunter2' });
    store.deleteApp('demo');
    await expect(pending).rejects.toMatchObject({ status: 404, code: 'not_found' });
    expect(store.listShareLinks('demo')).toEqual([]);
  });

  it('answers 404 for a password guess that lands after the link was revoked', async () => {
    const view = await shares.create(ALICE, 'demo', { password: 'hunter2' });
    const pending = shares.resolve(view.token, 'hunter2');
    shares.revoke(ALICE, view.token);
    await expect(pending).rejects.toMatchObject({ status: 404 });
  });

  it('skips ownership when auth is disabled, as every other route does', async () => {
    const view = await shares.create(NO_AUTH, 'demo');
    expect(view.app_id).toBe('demo');
  });

  it('needs the deploy scope from a key that has scopes', async () => {
    const readOnly = user('alice', { scopes: ['read'] });
    await expect(shares.create(readOnly, 'demo')).rejects.toMatchObject({
      status: 403,
      code: 'policy_denied',
    });
    const view = await shares.create(user('alice', { scopes: ['deploy'] }), 'demo');
    expect(() => shares.revoke(readOnly, view.token)).toThrow(/deploy/);
    expect(shares.list(readOnly, 'demo').total).toBe(1);
  });

  it.each([
    ['a later app of the same owner', { createdAt: '2099-01-01T00:00:00.000Z' }],
    ['an app of another owner', { ownerId: 'bob' }],
  ])('refuses a link row that outlived its app, now %s', async (_case, replacement) => {
    const view = await shares.create(ALICE, 'demo');
    expect(shares.peek(view.token)).toMatchObject({ kind: 'open' });
    // Only a store that failed to cascade could hold such a row; the resolve refuses it anyway.
    store.putApp(app('demo', { ownerId: 'alice', ...replacement }));
    expect(store.getShareLink(view.token)).toBeDefined();
    expect(() => shares.peek(view.token)).toThrow(/not found/);
  });
});
