import { afterAll, describe, expect, it } from 'vitest';
import { registerAuthMode } from '../../src/auth/modes.js';
import { ConfigError } from '../../src/config/load.js';
import { unauthenticated } from '../../src/errors.js';
import { startSlipway } from '../../src/start.js';
import { authConfig, call, json, removeDir, start, tempDataDir } from './helpers.js';

const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe('auth disabled', () => {
  it('treats every request as the admin identity', async () => {
    const s = await start({ enabled: false });
    cleanups.push(
      () => s.close(),
      () => removeDir(s.dataDir),
    );
    const me = await call(s.baseURL, '/api/whoami');
    expect(me.status).toBe(200);
    expect(me.body).toEqual({
      user_id: 'admin',
      name: 'admin',
      role: 'admin',
      scopes: [],
      mode: 'none',
    });
    expect((await call(s.baseURL, '/api/auth')).body).toEqual({
      enabled: false,
      mode: 'none',
      loginUrl: '',
    });
    expect((await call(s.baseURL, '/api/users')).status).toBe(200);
  });
});

describe('mode selection', () => {
  it('an unknown auth.mode stops the start with a ConfigError listing the registered modes', async () => {
    const dataDir = tempDataDir();
    cleanups.push(() => removeDir(dataDir));
    const failure = startSlipway(authConfig(dataDir, { mode: 'kerberos' }), { logger: false });
    await expect(failure).rejects.toBeInstanceOf(ConfigError);
    await expect(failure).rejects.toThrow(/unknown mode "kerberos".*apikey, oidc, oauth/);
  });

  it('a registered custom mode verifies tokens and mounts its public login route', async () => {
    cleanups.push(
      registerAuthMode({
        name: 'demo-login',
        create: () => ({
          name: 'demo-login',
          loginUrl: '/login/x',
          loginRoutes: [{ method: 'GET', url: '/login/x', handler: () => ({ login: 'page' }) }],
          verify: ({ bearer }) => {
            const token = bearer();
            if (!token.startsWith('demo:')) throw unauthenticated('not a demo token');
            return {
              userId: token.slice(5),
              name: token.slice(5),
              role: 'user',
              scopes: ['deploy'],
            };
          },
        }),
      }),
    );
    const s = await start({ mode: 'demo-login', identityCacheTTL: '0s' });
    cleanups.push(
      () => s.close(),
      () => removeDir(s.dataDir),
    );

    expect((await call(s.baseURL, '/api/auth')).body).toEqual({
      enabled: true,
      mode: 'demo-login',
      loginUrl: '/login/x',
    });
    const login = await call(s.baseURL, '/login/x');
    expect(login.status).toBe(200);
    expect(login.body).toEqual({ login: 'page' });
    const me = await call(s.baseURL, '/api/whoami', { token: 'demo:zoe' });
    expect(me.status).toBe(200);
    expect(json(me.body)).toMatchObject({
      user_id: 'zoe',
      mode: 'demo-login',
      scopes: ['deploy'],
      role: 'user',
    });
    expect(s.app.store.getUser('zoe')?.status).toBe('active');
    const refused = await call(s.baseURL, '/api/whoami', { token: 'other' });
    expect(refused.status).toBe(401);
    expect(json(refused.body).message).toBe('not a demo token');
  });

  it.each([
    '/api/login',
    '/v1/login',
    '/mcp/login',
    '/internal/sources/login',
    '/API/login',
    '/login/../v1/x',
  ])('a custom mode with a login route at %s is refused at start', async (url) => {
    const name = `bad-${Math.random().toString(36).slice(2, 8)}`;
    cleanups.push(
      registerAuthMode({
        name,
        create: () => ({
          name,
          loginRoutes: [{ method: 'GET', url, handler: () => 'no' }],
          verify: () => {
            throw unauthenticated();
          },
        }),
      }),
    );
    const dataDir = tempDataDir();
    cleanups.push(() => removeDir(dataDir));
    const failure = startSlipway(authConfig(dataDir, { mode: name }), { logger: false });
    await expect(failure).rejects.toBeInstanceOf(ConfigError);
    await expect(failure).rejects.toThrow(/login route .* protected prefix/);
  });

  it('refuses to register a name twice', () => {
    expect(() =>
      registerAuthMode({
        name: 'apikey',
        create: () => ({
          name: 'apikey',
          verify: () => {
            throw unauthenticated();
          },
        }),
      }),
    ).toThrow(/already registered/);
  });
});
