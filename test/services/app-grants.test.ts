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
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(code).not.toContain(token(1));
    expect(grants.redeem(code, 'api')).toBeUndefined();
    // Spent by the wrong host too: a code is never tried twice.
    expect(grants.redeem(code, 'web')).toBeUndefined();

    const fresh = grants.issueCode(linkOf(1));
    const spent = grants.redeem(fresh, 'web');
    expect(spent?.grant).toMatch(/^[A-Za-z0-9_-]{43}$/);
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
    expect(grants.size.grants).toBe(0);
  });

  it('ends a grant of a link that never expires after a day', () => {
    const g = grants.redeem(grants.issueCode(linkOf(1)), 'web');
    now += 24 * 3600_000 - 1;
    expect(grants.check(String(g?.grant), 'web')).toBe(true);
    now += 1;
    expect(grants.check(String(g?.grant), 'web')).toBe(false);
  });

  it('keeps codes and grants bounded, per link too, dropping the oldest', () => {
    store.addShareLink(link(token(2), 'web'));
    const small = new AppGrants(store, {
      now: () => now,
      limits: { maxCodes: 3, maxGrants: 4, maxGrantsPerLink: 2 },
    });
    const codes = [1, 2, 3, 4].map(() => small.issueCode(linkOf(1)));
    expect(small.size.codes).toBe(3);
    expect(small.redeem(codes[0] ?? '', 'web')).toBeUndefined();

    const spend = (n: number) => small.redeem(small.issueCode(linkOf(n)), 'web')?.grant ?? '';
    const [first, second, third] = [spend(1), spend(1), spend(1)];
    expect(small.check(first, 'web')).toBe(false);
    expect(small.check(second, 'web')).toBe(true);
    expect(small.check(third, 'web')).toBe(true);
    // One link's visitors cannot push out another link's.
    const other = [spend(2), spend(2), spend(2)];
    expect(small.size.grants).toBe(4);
    expect(small.check(second, 'web')).toBe(true);
    expect(small.check(other[2] ?? '', 'web')).toBe(true);
  });

  it('builds the grant address on the app host', () => {
    expect(grantUrl('http://web.localhost:8080/', 'abc')).toBe(
      'http://web.localhost:8080/__slipway/access?code=abc',
    );
  });
});
