import { afterAll, describe, expect, it } from 'vitest';
import { isTrusted, trustedProxies } from '../../src/auth/oauth-proxy.js';
import { startSlipway } from '../../src/start.js';
import { authConfig, call, json, removeDir, start, tempDataDir } from './helpers.js';

const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe('oauth (trusted proxy) mode', () => {
  it('takes the role from the proxy groups when adminGroup is set', async () => {
    const s = await start({
      mode: 'oauth',
      identityCacheTTL: '0s',
      oauth: { trustedProxies: ['127.0.0.0/8'], adminGroup: 'platform-admins' },
    });
    cleanups.push(
      () => s.close(),
      () => removeDir(s.dataDir),
    );
    const admin = await call(s.baseURL, '/api/users', {
      headers: { 'x-forwarded-user': 'ana', 'x-forwarded-groups': 'dev, platform-admins' },
    });
    expect(admin.status).toBe(200);
    const me = await call(s.baseURL, '/api/whoami', {
      headers: { 'x-forwarded-user': 'ana', 'x-forwarded-groups': 'dev' },
    });
    expect(json(me.body)).toMatchObject({ user_id: 'ana', role: 'user' });
    const user = await call(s.baseURL, '/api/users', {
      headers: { 'x-forwarded-user': 'ana', 'x-forwarded-groups': 'platform-admins-not' },
    });
    expect(user.status).toBe(403);
  });

  it('believes the user header from a trusted peer', async () => {
    const s = await start({
      mode: 'oauth',
      identityCacheTTL: '0s',
      oauth: { trustedProxies: ['127.0.0.0/8'] },
    });
    cleanups.push(
      () => s.close(),
      () => removeDir(s.dataDir),
    );
    const me = await call(s.baseURL, '/api/whoami', {
      headers: { 'x-forwarded-user': 'pat', authorization: 'Bearer upstream-token' },
    });
    expect(me.status).toBe(200);
    expect(json(me.body)).toMatchObject({ user_id: 'pat', role: 'user', mode: 'oauth' });
    const missing = await call(s.baseURL, '/api/whoami');
    expect(missing.status).toBe(401);
    expect(json(missing.body).code).toBe('unauthenticated');
    const reserved = await call(s.baseURL, '/api/whoami', {
      headers: { 'x-forwarded-user': 'apikey-default' },
    });
    expect(reserved.status).toBe(401);
  });

  it('refuses the header from a peer that is not a trusted proxy', async () => {
    const s = await start({
      mode: 'oauth',
      oauth: { trustedProxies: ['10.1.2.3', '192.168.0.0/16'] },
    });
    cleanups.push(
      () => s.close(),
      () => removeDir(s.dataDir),
    );
    const res = await call(s.baseURL, '/api/whoami', {
      headers: { 'x-forwarded-user': 'pat', 'x-forwarded-for': '10.1.2.3' },
    });
    expect(res.status).toBe(401);
    expect(json(res.body).code).toBe('unauthenticated');
  });

  it('a bad trustedProxies entry stops the start', async () => {
    const dataDir = tempDataDir();
    cleanups.push(() => removeDir(dataDir));
    const failure = startSlipway(
      authConfig(dataDir, { mode: 'oauth', oauth: { trustedProxies: ['10.0.0.0/40'] } }),
      { logger: false },
    );
    await expect(failure).rejects.toThrow(/trustedProxies: "10.0.0.0\/40"/);
  });

  it('matches IPv4-mapped IPv6 peers and IPv6 CIDRs', () => {
    const list = trustedProxies(['10.0.0.0/8', '::1', 'fd00::/8', '::ffff:192.0.2.1']);
    expect(isTrusted(list, '::ffff:10.9.8.7')).toBe(true);
    expect(isTrusted(list, '10.9.8.7')).toBe(true);
    expect(isTrusted(list, '192.0.2.1')).toBe(true);
    expect(isTrusted(list, '::1')).toBe(true);
    expect(isTrusted(list, 'fd12::5')).toBe(true);
    expect(isTrusted(list, '11.0.0.1')).toBe(false);
    expect(isTrusted(list, '::ffff:11.0.0.1')).toBe(false);
    expect(isTrusted(list, 'fe80::1')).toBe(false);
  });
});
