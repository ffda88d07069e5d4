import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/keys.js';
import { connect, ok } from '../mcp/support.js';
import { call, json, removeDir, start, type Started } from './helpers.js';

const ROOT = 'last-admin-root-key-0123456789';
const PLAIN = 'last-admin-plain-key-0123456789';
const SOLO = 'slw_last-admin-solo-key-0123456789';

const as = (token: string, method = 'GET', body?: unknown) => ({
  token,
  method,
  ...(body === undefined ? {} : { body }),
});

/** Lists the tools' view of the apps with `token` over MCP: the key still works there too. */
async function mcpWorks(s: Started, token: string): Promise<void> {
  const { client } = await connect(s.baseURL, token);
  try {
    expect(await ok(client, 'list_apps')).toMatchObject({ items: expect.any(Array) });
  } finally {
    await client.close();
  }
}

/**
 * The last active admin cannot suspend, demote or delete itself away (409 `last_admin`): with no
 * admin left, every call of the suspended one would be 401 and nobody could manage users again.
 */
describe('the last active admin', () => {
  let s: Started;

  beforeAll(async () => {
    // The only admin is an issued user (created through the API earlier, seeded here).
    s = await start({ identityCacheTTL: '0s', apiKeys: [{ key: PLAIN, name: 'plain' }] });
    const now = new Date().toISOString();
    s.app.store.ensureUser({
      id: 'apikey-solo',
      name: 'solo',
      role: 'admin',
      status: 'active',
      apiKeyHash: hashApiKey(SOLO),
      createdAt: now,
      updatedAt: now,
    });
  });
  afterAll(async () => {
    await s.close();
    removeDir(s.dataDir);
  });

  it('cannot suspend, demote or delete itself: 409 saying why; it keeps working over HTTP and MCP', async () => {
    const answers = [
      await call(s.baseURL, '/api/users/apikey-solo', as(SOLO, 'PATCH', { status: 'suspended' })),
      await call(s.baseURL, '/api/users/apikey-solo', as(SOLO, 'PATCH', { role: 'user' })),
      await call(s.baseURL, '/api/users/apikey-solo', as(SOLO, 'DELETE')),
    ];
    expect(answers.map((res) => res.status)).toEqual([409, 409, 409]);
    expect(json(answers[0]?.body)).toEqual({
      code: 'last_admin',
      message:
        'user apikey-solo is the last active admin: suspending it would leave no one able to ' +
        'manage users. Make another user admin first.',
      details: { user: 'apikey-solo' },
    });
    expect(answers.map((res) => json(res.body).message)).toEqual([
      expect.stringContaining('suspending it would leave no one'),
      expect.stringContaining('demoting it would leave no one'),
      expect.stringContaining('deleting it would leave no one'),
    ]);
    expect(s.app.store.getUser('apikey-solo')).toMatchObject({ role: 'admin', status: 'active' });
    expect((await call(s.baseURL, '/api/users', as(SOLO))).status).toBe(200);
    await mcpWorks(s, SOLO);
  });

  it('suspends itself while another admin exists; that one then cannot go', async () => {
    const created = await call(
      s.baseURL,
      '/api/users',
      as(SOLO, 'POST', { name: 'second', role: 'admin' }),
    );
    expect(created.status).toBe(201);
    const second = String(json(created.body).api_key);

    const suspended = await call(
      s.baseURL,
      '/api/users/apikey-solo',
      as(SOLO, 'PATCH', { status: 'suspended' }),
    );
    expect(suspended.status).toBe(200);
    expect((await call(s.baseURL, '/api/whoami', as(SOLO))).status).toBe(401);

    const answers = [
      await call(
        s.baseURL,
        '/api/users/apikey-second',
        as(second, 'PATCH', { status: 'suspended' }),
      ),
      await call(s.baseURL, '/api/users/apikey-second', as(second, 'PATCH', { role: 'user' })),
      await call(s.baseURL, '/api/users/apikey-second', as(second, 'DELETE')),
    ];
    expect(answers.map((res) => res.status)).toEqual([409, 409, 409]);
    expect(answers.every((res) => json(res.body).code === 'last_admin')).toBe(true);
    expect((await call(s.baseURL, '/api/whoami', as(second))).status).toBe(200);

    // With solo back, either may go.
    const back = await call(
      s.baseURL,
      '/api/users/apikey-solo',
      as(second, 'PATCH', { status: 'active' }),
    );
    expect(back.status).toBe(200);
    expect((await call(s.baseURL, '/api/users/apikey-second', as(SOLO, 'DELETE'))).status).toBe(
      204,
    );
  });

  it('two admins suspending each other at once: one of them stays', async () => {
    const created = await call(
      s.baseURL,
      '/api/users',
      as(SOLO, 'POST', { name: 'third', role: 'admin' }),
    );
    const third = String(json(created.body).api_key);
    const answers = await Promise.all([
      call(s.baseURL, '/api/users/apikey-third', as(SOLO, 'PATCH', { status: 'suspended' })),
      call(s.baseURL, '/api/users/apikey-solo', as(third, 'PATCH', { status: 'suspended' })),
    ]);
    // The second to run is refused: 409, or 401 when its own suspension landed first.
    expect(answers.map((res) => res.status).sort()).toEqual([200, expect.toBeOneOf([401, 409])]);
    const active = s.app.store
      .listUsers()
      .filter((user) => user.role === 'admin' && user.status === 'active');
    expect(active).toHaveLength(1);
  });
});

/**
 * A configured admin key (here the only key a client holds, as a schema-driven test run does) is
 * never suspended or demoted through the API, whatever other admins exist: the config decides.
 */
describe('a configured admin key', () => {
  let s: Started;

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

  it('is not suspended even once another admin exists, and keeps working over HTTP and MCP', async () => {
    // What a schema-driven run did: create a user, make it admin, then suspend the key it holds.
    const created = await call(s.baseURL, '/api/users', as(ROOT, 'POST', { name: 'alice' }));
    expect(created.status).toBe(201);
    const promoted = await call(
      s.baseURL,
      '/api/users/apikey-alice',
      as(ROOT, 'PATCH', { role: 'admin' }),
    );
    expect(promoted.status).toBe(200);
    expect((await call(s.baseURL, '/api/whoami', as(ROOT))).status).toBe(200);

    const refused = await call(
      s.baseURL,
      '/api/users/apikey-root',
      as(ROOT, 'PATCH', { status: 'suspended' }),
    );
    expect(refused.status).toBe(409);
    expect(json(refused.body)).toMatchObject({
      code: 'configured_admin',
      message: expect.stringMatching(/^user apikey-root is an admin key of the server's config/),
    });
    expect(s.app.store.getUser('apikey-root')?.status).toBe('active');
    expect((await call(s.baseURL, '/api/users', as(ROOT))).status).toBe(200);
    await mcpWorks(s, ROOT);
  });

  it('is not demoted or deleted either: 409, and it stays an active admin', async () => {
    const demoted = await call(
      s.baseURL,
      '/api/users/apikey-root',
      as(ROOT, 'PATCH', { role: 'user' }),
    );
    expect(demoted.status).toBe(409);
    expect(json(demoted.body).code).toBe('configured_admin');
    const deleted = await call(s.baseURL, '/api/users/apikey-root', as(ROOT, 'DELETE'));
    expect(deleted.status).toBe(409);
    expect(json(deleted.body).code).toBe('configured_admin');
    expect((await call(s.baseURL, '/api/users', as(ROOT))).status).toBe(200);
    expect(s.app.store.getUser('apikey-root')).toMatchObject({ role: 'admin', status: 'active' });
  });
});
