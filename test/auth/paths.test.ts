import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isProtectedPath, isReservedPath } from '../../src/auth/paths.js';
import { call, rawGet, removeDir, start, type Started } from './helpers.js';

const KEY = 'paths-test-key';

describe('protected-path table over HTTP', () => {
  let s: Started;
  beforeAll(async () => {
    s = await start({
      identityCacheTTL: '0s',
      apiKeys: [{ key: KEY, name: 'paths', role: 'admin' }],
    });
  });
  afterAll(async () => {
    await s.close();
    removeDir(s.dataDir);
  });

  const open = [
    '/healthz',
    '/readyz',
    '/metrics',
    '/',
    '/api/auth',
    '/api/share/some-token',
    '/.well-known/oauth-protected-resource',
    '/login/x',
    '/favicon.ico',
  ];
  it.each(open)('%s is open without a token', async (path) => {
    const res = await rawGet(s.baseURL, path);
    expect(res.status).not.toBe(401);
    expect(res.status).toBeLessThan(500);
  });

  it('/api/auth answers its body without a token', async () => {
    const res = await call(s.baseURL, '/api/auth');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ enabled: true, mode: 'apikey', loginUrl: '' });
  });

  const protectedPaths = [
    '/mcp',
    '/mcp/',
    '/mcp/anything',
    '/api/whoami',
    '/api/users',
    '/api/events',
    '/api/nope',
    '/api/share',
    '/v1/apps',
    '/v1/apps/x',
    '/v1/nope',
    '/internal/sources/x.v1.abc.tar.gz',
  ];
  it.each(protectedPaths)('%s is 401 without a token', async (path) => {
    const res = await rawGet(s.baseURL, path);
    expect(res.status).toBe(401);
    expect(JSON.parse(res.body)).toMatchObject({ code: 'unauthenticated' });
  });

  const tricks = [
    '/V1/apps',
    '/API/whoami',
    '/Api/Users',
    '//api/whoami',
    '//v1/apps',
    '/./api/whoami',
    '/v1/../api/whoami',
    '/healthz/../api/whoami',
    '/api/share/../whoami',
    '/api/share/..%2fwhoami',
    '/api/share/%2e%2e/whoami',
    '/api/share/%2E%2E%2Fusers',
    '/%61pi/whoami',
    '/%2561pi/whoami',
    '/api%2fwhoami',
    '/api/whoami?x=/healthz',
    '/api/whoami#/healthz',
    '/api/whoami;/healthz',
    '/api/auth/../whoami',
    '/api/auth/',
    '/api/auth%2f..%2fwhoami',
    '/api\\whoami',
    '/api/whoami/',
    '/api/users/',
    `http://127.0.0.1/api/whoami`,
    '/mcp%2f',
    '/%6dcp',
  ];
  it.each(tricks)('%s never reaches a protected handler without a token', async (target) => {
    const withToken = await rawGet(s.baseURL, target, { authorization: `Bearer ${KEY}` });
    const without = await rawGet(s.baseURL, target);
    expect([401, 404]).toContain(without.status);
    // Whatever the router sends to a protected handler (200 with the key) must be 401 without it.
    if (withToken.status === 200) expect(without.status).toBe(401);
  });

  it('a routed encoding trick is really routed, and refused without a token', async () => {
    // find-my-way decodes %61 to "a": this is /api/whoami to the router.
    expect(
      (await rawGet(s.baseURL, '/%61pi/whoami', { authorization: `Bearer ${KEY}` })).status,
    ).toBe(200);
    expect((await rawGet(s.baseURL, '/%61pi/whoami')).status).toBe(401);
  });
});

describe('exemptions for the app router', () => {
  it('a request the predicate accepts skips auth; a throwing predicate fails closed', async () => {
    const s = await start({ apiKeys: [{ key: KEY, name: 'paths' }] });
    try {
      s.app.auth.exempt((request) => request.headers.host === 'demo.apps.test');
      s.app.auth.exempt((request) => {
        if (request.headers.host === 'boom.apps.test') throw new Error('broken predicate');
        return false;
      });
      const exempt = await rawGet(s.baseURL, '/api/nope', { host: 'demo.apps.test' });
      expect(exempt.status).toBe(404);
      expect((await rawGet(s.baseURL, '/api/nope', { host: 'other.apps.test' })).status).toBe(401);
      expect((await rawGet(s.baseURL, '/api/nope', { host: 'boom.apps.test' })).status).toBe(401);
    } finally {
      await s.close();
      removeDir(s.dataDir);
    }
  });
});

describe('isProtectedPath', () => {
  it.each([
    ['/api/whoami', true],
    ['/api', true],
    ['/v1', true],
    ['/mcp', true],
    ['/mcpx', false],
    ['/internal/sources', true],
    ['/internal/other', false],
    ['/api/share/t', false],
    ['/api/share/t/../../users', true],
    ['/api/auth', false],
    ['/api/auth?x=1', false],
    ['/api/authx', true],
    ['/', false],
    ['/healthz', false],
    ['/.well-known/x', false],
    ['/static/%2e%2e/v1/apps', true],
    ['/x/..%5cv1/apps', true],
    ['/./v1', true],
    ['/v1/.hidden', true],
    ['/V1/', true],
  ])('%s → %s', (path, expected) => {
    expect(isProtectedPath(path)).toBe(expected);
  });

  it('reserved login paths include every protected prefix, even /api/share', () => {
    expect(isReservedPath('/api/share/login')).toBe(true);
    expect(isReservedPath('/API/login')).toBe(true);
    expect(isReservedPath('/login/../v1/x')).toBe(true);
    expect(isReservedPath('/login/x')).toBe(false);
  });
});
