import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, ok } from '../mcp/support.js';
import { call, json, removeDir, start, type Started } from './helpers.js';

const ROOT = 'last-admin-root-key-0123456789';

/**
 * The last active admin cannot suspend, demote or delete itself away (409 `last_admin`): with no
 * admin left, every call of the suspended one would be 401 and nobody could manage users again.
 */
describe('the last active admin', () => {
  let s: Started;
  const as = (token: string, method = 'GET', body?: unknown) => ({
    token,
    method,
    ...(body === undefined ? {} : { body }),
  });

  beforeAll(async () => {
    s = await start({
      identityCacheTTL: '0s',
      apiKeys: [{ key: ROOT, name: 'root', role: 'admin' }],
    });
  });
  afterAll(async () => {
    await s.close();
    removeDir(s.dataDir);
  });

  it('cannot suspend itself: 409 saying why, and it keeps working over HTTP and MCP', async () => {
    expect((await call(s.baseURL, '/api/whoami', as(ROOT))).status).toBe(200);
    const refused = await call(
      s.baseURL,
      '/api/users/apikey-root',
      as(ROOT, 'PATCH', { status: 'suspended' }),
    );
    expect(refused.status).toBe(409);
    expect(json(refused.body)).toEqual({
      code: 'last_admin',
      message:
        'user apikey-root is the last active admin: suspending it would leave no one able to ' +
        'manage users. Make another user admin first.',
      details: { user: 'apikey-root' },
    });
    expect(s.app.store.getUser('apikey-root')?.status).toBe('active');
    expect((await call(s.baseURL, '/api/users', as(ROOT))).status).toBe(200);

    const { client } = await connect(s.baseURL, ROOT);
    try {
      expect(await ok(client, 'list_apps')).toMatchObject({ total: 0 });
    } finally {
      await client.close();
    }
  });

  it('suspends itself while another admin exists; that one then cannot go', async () => {
    const created = await call(
      s.baseURL,
      '/api/users',
      as(ROOT, 'POST', { name: 'second', role: 'admin' }),
    );
    expect(created.status).toBe(201);
    const second = String(json(created.body).api_key);

    const suspended = await call(
      s.baseURL,
      '/api/users/apikey-root',
      as(ROOT, 'PATCH', { status: 'suspended' }),
    );
    expect(suspended.status).toBe(200);
    expect((await call(s.baseURL, '/api/whoami', as(ROOT))).status).toBe(401);

    // `second` is now the only active admin: every way of losing it is refused.
    const attempts = [
      call(s.baseURL, '/api/users/apikey-second', as(second, 'PATCH', { status: 'suspended' })),
      call(s.baseURL, '/api/users/apikey-second', as(second, 'PATCH', { role: 'user' })),
      call(s.baseURL, '/api/users/apikey-second', as(second, 'DELETE')),
    ];
    const answers = await Promise.all(attempts);
    expect(answers.map((res) => res.status)).toEqual([409, 409, 409]);
    expect(answers.map((res) => json(res.body).message)).toEqual([
      expect.stringContaining('suspending it would leave no one'),
      expect.stringContaining('demoting it would leave no one'),
      expect.stringContaining('deleting it would leave no one'),
    ]);
    expect(s.app.store.getUser('apikey-second')).toMatchObject({ role: 'admin', status: 'active' });
    expect((await call(s.baseURL, '/api/whoami', as(second))).status).toBe(200);

    // With root back, either may go.
    const back = await call(
      s.baseURL,
      '/api/users/apikey-root',
      as(second, 'PATCH', { status: 'active' }),
    );
    expect(back.status).toBe(200);
    expect((await call(s.baseURL, '/api/users/apikey-second', as(ROOT, 'DELETE'))).status).toBe(
      204,
    );
  });

  it('two admins suspending each other at once: one of them stays', async () => {
    const created = await call(
      s.baseURL,
      '/api/users',
      as(ROOT, 'POST', { name: 'third', role: 'admin' }),
    );
    const third = String(json(created.body).api_key);
    const answers = await Promise.all([
      call(s.baseURL, '/api/users/apikey-third', as(ROOT, 'PATCH', { status: 'suspended' })),
      call(s.baseURL, '/api/users/apikey-root', as(third, 'PATCH', { status: 'suspended' })),
    ]);
    // The second to run is refused: 409, or 401 when its own suspension landed first.
    expect(answers.map((res) => res.status).sort()).toEqual([200, expect.toBeOneOf([401, 409])]);
    const active = s.app.store
      .listUsers()
      .filter((user) => user.role === 'admin' && user.status === 'active');
    expect(active).toHaveLength(1);
  });
});
