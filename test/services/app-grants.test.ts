import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/persistence/sqlite-store.js';
import type { Store } from '../../src/persistence/store.js';
import { AppGrants, grantUrl } from '../../src/services/app-grants.js';
import { app, link, tempDir } from '../persistence/fixtures.js';

const T0 = Date.parse('2025-01-01T00:00:00.000Z');
const token = (n: number): string => n.toString(16).padStart(64, '0');

describe('AppGrants: codes and grants of private apps', () => {
  let store: Store;
  let cleanup: () => void;
  let now: number;
  let grants: AppGrants;
  beforeEach(() => {
    const tmp = tempDir();
    cleanup = tmp.cleanup;
    store = openSqliteStore(join(tmp.dir, 'slipway.db'));
    store.putApp(app('web', { access: 'private' }));
    store.putApp(app('api', { access: 'private' }));
    store.addShareLink(link(token(1), 'web'));
    now = T0 + 1_000;
    grants = new AppGrants(store, { now: () => now });
  });
  afterEach(() => {
    store.close();
    cleanup();
  });

  const linkOf = (n: number) => {
    const found = store.getShareLink(token(n));
    if (!found) throw new Error(`no link ${n}`);
    return found;
  };

  it('spends a code once, on its own app, within its minute', () => {
    const code = grants.issueCode(linkOf(1));
    expect(code).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(code).not.toContain(token(1));
    expect(Buffer.from(String(code.split('.')[0]), 'base64url').toString()).not.toContain(token(1));
    expect(grants.redeem(code, 'api')).toBeUndefined();
    // Spent by the wrong host too: a code is never tried twice.
    expect(grants.redeem(code, 'web')).toBeUndefined();

    const fresh = grants.issueCode(linkOf(1));
    const spent = grants.redeem(fresh, 'web');
    expect(spent?.grant).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(spent?.grant).not.toBe(fresh);
    expect(grants.redeem(fresh, 'web')).toBeUndefined();

    const late = grants.issueCode(linkOf(1));
    now += 60_000;
    expect(grants.redeem(late, 'web')).toBeUndefined();
    expect(grants.redeem('', 'web')).toBeUndefined();
  });

  it('checks a grant against its link on every call: revoke, expiry, app deleted', () => {
    store.addShareLink(link(token(2), 'web', { expiresAt: new Date(T0 + 10_000).toISOString() }));
    store.addShareLink(link(token(3), 'web'));
    const a = grants.redeem(grants.issueCode(linkOf(1)), 'web');
    const b = grants.redeem(grants.issueCode(linkOf(2)), 'web');
    const c = grants.redeem(grants.issueCode(linkOf(3)), 'web');
    if (!a || !b || !c) throw new Error('a grant was refused');
    expect(b.maxAgeSeconds).toBe(9);
    expect(a.maxAgeSeconds).toBe(24 * 3600);
    for (const g of [a, b, c]) expect(grants.check(g.grant, 'web')).toBe(true);
    expect(grants.check(a.grant, 'api')).toBe(false);

    store.revokeShareLink(token(1), new Date(now).toISOString());
    expect(grants.check(a.grant, 'web')).toBe(false);
    now = T0 + 10_000;
    expect(grants.check(b.grant, 'web')).toBe(false);
    expect(grants.check(c.grant, 'web')).toBe(true);
    store.deleteApp('web');
    store.putApp(app('web', { access: 'private', createdAt: new Date(now).toISOString() }));
    expect(grants.check(c.grant, 'web')).toBe(false);
  });

  it('keeps grants across a restart (a new instance on the same store), signed and untamperable', () => {
    const g = grants.redeem(grants.issueCode(linkOf(1)), 'web');
    if (!g) throw new Error('a grant was refused');
    expect(g.grant).not.toContain(token(1));
    const restarted = new AppGrants(store, { now: () => now });
    expect(restarted.check(g.grant, 'web')).toBe(true);
    expect(restarted.check(g.grant, 'api')).toBe(false);
    // Another installation's key does not sign for this one.
    const other = openSqliteStore(join(tempDir().dir, 'other.db'));
    other.putApp(app('web', { access: 'private' }));
    other.addShareLink(link(token(1), 'web'));
    expect(new AppGrants(other, { now: () => now }).check(g.grant, 'web')).toBe(false);
    other.close();
    // An edited payload (another app, a later end) breaks the signature.
    const [body, mac] = g.grant.split('.');
    const payload = JSON.parse(Buffer.from(String(body), 'base64url').toString()) as object;
    const forged = Buffer.from(JSON.stringify({ ...payload, a: 'api', e: now + 1e12 })).toString(
      'base64url',
    );
    expect(restarted.check(`${forged}.${mac}`, 'api')).toBe(false);
    expect(restarted.check(`${body}.${mac}x`, 'web')).toBe(false);
    expect(restarted.check('', 'web')).toBe(false);
    // Still revocable on the next request after the restart.
    store.revokeShareLink(token(1), new Date(now).toISOString());
    expect(restarted.check(g.grant, 'web')).toBe(false);
  });

  it('ends a grant of a link that never expires after a day', () => {
    const g = grants.redeem(grants.issueCode(linkOf(1)), 'web');
    now += 24 * 3600_000 - 1;
    expect(grants.check(String(g?.grant), 'web')).toBe(true);
    now += 1;
    expect(grants.check(String(g?.grant), 'web')).toBe(false);
  });

  it('keeps a code across a restart, good once on either side of it', () => {
    const before = grants.issueCode(linkOf(1));
    const spentBefore = grants.issueCode(linkOf(1));
    expect(grants.redeem(spentBefore, 'web')).toBeDefined();
    const restarted = new AppGrants(store, { now: () => now });
    expect(restarted.redeem(spentBefore, 'web')).toBeUndefined();
    expect(restarted.redeem(before, 'web')).toBeDefined();
    expect(new AppGrants(store, { now: () => now }).redeem(before, 'web')).toBeUndefined();
    // A restart does not void a revoke either.
    const late = restarted.issueCode(linkOf(1));
    store.revokeShareLink(token(1), new Date(now).toISOString());
    expect(new AppGrants(store, { now: () => now }).redeem(late, 'web')).toBeUndefined();
  });

  it('never takes a grant for a code or a code for a grant, nor an edited code', () => {
    const code = grants.issueCode(linkOf(1));
    expect(grants.check(code, 'web')).toBe(false);
    const g = grants.redeem(grants.issueCode(linkOf(1)), 'web');
    expect(grants.redeem(String(g?.grant), 'web')).toBeUndefined();
    const [body, mac] = code.split('.');
    const payload = JSON.parse(Buffer.from(String(body), 'base64url').toString()) as object;
    const later = Buffer.from(JSON.stringify({ ...payload, e: now + 1e12 })).toString('base64url');
    expect(grants.redeem(`${later}.${mac}`, 'web')).toBeUndefined();
    expect(grants.redeem(code, 'web')).toBeDefined();
  });

  it('remembers a bounded number of spent codes, refusing more until their minute is over', () => {
    const small = new AppGrants(store, { now: () => now, limits: { maxCodes: 3 } });
    const codes = [1, 2, 3, 4].map(() => small.issueCode(linkOf(1)));
    for (const code of codes.slice(0, 3)) expect(small.redeem(code, 'web')).toBeDefined();
    expect(small.redeem(codes[3] ?? '', 'web')).toBeUndefined();
    now += 60_000;
    const fresh = small.issueCode(linkOf(1));
    expect(small.redeem(fresh, 'web')).toBeDefined();
    expect(JSON.parse(store.getMeta('share_spent_codes') ?? '[]')).toHaveLength(1);
  });

  it('builds the grant address on the app host', () => {
    expect(grantUrl('http://web.localhost:8080/', 'abc')).toBe(
      'http://web.localhost:8080/__slipway/access?code=abc',
    );
  });
});
