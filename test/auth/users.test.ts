import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, json, removeDir, start, type Started } from './helpers.js';

const ADMIN = 'users-test-admin-key';
const PLAIN = 'users-test-plain-key';

describe('/api/users', () => {
  let s: Started;
  const as = (token: string) => ({ token });

  beforeAll(async () => {
    s = await start({
      identityCacheTTL: '30s',
      apiKeys: [
        { key: ADMIN, name: 'root', role: 'admin' },
        { key: PLAIN, name: 'plain' },
      ],
    });
  });
  afterAll(async () => {
    await s.close();
    removeDir(s.dataDir);
  });

  it('is admin-only: a user gets 403 forbidden on every route', async () => {
    const attempts = [
      call(s.baseURL, '/api/users', as(PLAIN)),
      call(s.baseURL, '/api/users', { ...as(PLAIN), method: 'POST', body: { name: 'sneaky' } }),
      call(s.baseURL, '/api/users/apikey-root', as(PLAIN)),
      call(s.baseURL, '/api/users/apikey-plain', {
        ...as(PLAIN),
        method: 'PATCH',
        body: { role: 'admin' },
      }),
      call(s.baseURL, '/api/users/apikey-root', { ...as(PLAIN), method: 'DELETE' }),
      call(s.baseURL, '/api/departments', as(PLAIN)),
      call(s.baseURL, '/api/departments', { ...as(PLAIN), method: 'POST', body: { id: 'x' } }),
    ];
    for (const res of await Promise.all(attempts)) {
      expect(res.status).toBe(403);
      expect(json(res.body).code).toBe('forbidden');
    }
    expect(s.app.store.getUser('apikey-sneaky')).toBeUndefined();
    expect(s.app.store.getUser('apikey-plain')?.role).toBe('user');
  });

  it('creates a user whose returned key works, never showing the hash', async () => {
    const created = await call(s.baseURL, '/api/users', {
      ...as(ADMIN),
      method: 'POST',
      body: { name: 'alice', email: 'alice@example.com' },
    });
    expect(created.status).toBe(201);
    const { user, api_key: apiKey } = json(created.body) as {
      user: Record<string, unknown>;
      api_key: string;
    };
    expect(user).toMatchObject({
      id: 'apikey-alice',
      name: 'alice',
      role: 'user',
      status: 'active',
      email: 'alice@example.com',
    });
    expect(apiKey).toMatch(/^slw_[A-Za-z0-9_-]{43}$/);
    expect(JSON.stringify(created.body)).not.toMatch(/hash/i);
    expect(s.app.store.getUser('apikey-alice')?.apiKeyHash).toMatch(/^[0-9a-f]{64}$/);
    expect(s.app.store.getUser('apikey-alice')?.apiKeyHash).not.toContain(apiKey);

    const me = await call(s.baseURL, '/api/whoami', as(apiKey));
    expect(me.status).toBe(200);
    expect(json(me.body)).toMatchObject({
      user_id: 'apikey-alice',
      role: 'user',
      email: 'alice@example.com',
    });

    const one = await call(s.baseURL, '/api/users/apikey-alice', as(ADMIN));
    expect(one.body).toEqual(user);

    const list = await call(s.baseURL, '/api/users', as(ADMIN));
    const items = json(list.body).items as Array<Record<string, unknown>>;
    expect(json(list.body).total).toBe(items.length);
    expect(items.map((u) => u.id)).toEqual(expect.arrayContaining(['apikey-alice', 'apikey-root']));
    expect(JSON.stringify(list.body)).not.toMatch(/hash/i);
  });

  it('refuses a taken name with 409 name_taken, also for a configured key name', async () => {
    for (const name of ['alice', 'plain']) {
      const res = await call(s.baseURL, '/api/users', {
        ...as(ADMIN),
        method: 'POST',
        body: { name },
      });
      expect(res.status).toBe(409);
      expect(json(res.body).code).toBe('name_taken');
    }
  });

  it('validates bodies: bad name, unknown field, wrong type → 400; unknown department → 409', async () => {
    const bodies = [
      { name: '-bad' },
      { name: 'ok', admin: true },
      { name: 'ok', role: 'root' },
      { name: 12345 },
    ];
    for (const body of bodies) {
      const res = await call(s.baseURL, '/api/users', { ...as(ADMIN), method: 'POST', body });
      expect(res.status).toBe(400);
      expect(json(res.body).code).toBe('bad_request');
    }
    const nowhere = { name: 'ok', department: 'nowhere' };
    const res = await call(s.baseURL, '/api/users', {
      ...as(ADMIN),
      method: 'POST',
      body: nowhere,
    });
    expect(res.status).toBe(409);
    expect(json(res.body)).toMatchObject({
      code: 'unknown_department',
      details: { department: 'nowhere' },
    });
    expect(s.app.store.getUser('apikey-ok')).toBeUndefined();
    expect(s.app.store.getUser('apikey-12345')).toBeUndefined();
  });

  it('PATCH of an existing user to an unknown department → 409, told apart from an unknown user', async () => {
    const before = s.app.store.getUser('apikey-plain');
    const res = await call(s.baseURL, '/api/users/apikey-plain', {
      ...as(ADMIN),
      method: 'PATCH',
      body: { department: 'nowhere', status: 'suspended' },
    });
    expect(res.status).toBe(409);
    expect(json(res.body)).toMatchObject({
      code: 'unknown_department',
      details: { department: 'nowhere' },
    });
    expect(s.app.store.getUser('apikey-plain')).toEqual(before);
  });

  it('GET, PATCH and DELETE an unknown id → 404', async () => {
    expect((await call(s.baseURL, '/api/users/apikey-ghost', as(ADMIN))).status).toBe(404);
    const patch = await call(s.baseURL, '/api/users/apikey-ghost', {
      ...as(ADMIN),
      method: 'PATCH',
      body: { role: 'admin' },
    });
    expect(patch.status).toBe(404);
    const del = await call(s.baseURL, '/api/users/apikey-ghost', {
      ...as(ADMIN),
      method: 'DELETE',
    });
    expect(del.status).toBe(404);
    expect(json(del.body).code).toBe('not_found');
  });

  it('a suspension through the API applies at once despite a warm 30s cache, and lifts again', async () => {
    const { api_key: key } = json(
      (await call(s.baseURL, '/api/users', { ...as(ADMIN), method: 'POST', body: { name: 'bob' } }))
        .body,
    ) as { api_key: string };
    expect((await call(s.baseURL, '/api/whoami', as(key))).status).toBe(200);
    const patched = await call(s.baseURL, '/api/users/apikey-bob', {
      ...as(ADMIN),
      method: 'PATCH',
      body: { status: 'suspended' },
    });
    expect(json(patched.body)).toMatchObject({ id: 'apikey-bob', status: 'suspended' });
    const refused = await call(s.baseURL, '/api/whoami', as(key));
    expect(refused.status).toBe(401);
    expect(json(refused.body).code).toBe('unauthenticated');
    await call(s.baseURL, '/api/users/apikey-bob', {
      ...as(ADMIN),
      method: 'PATCH',
      body: { status: 'active' },
    });
    expect((await call(s.baseURL, '/api/whoami', as(key))).status).toBe(200);
  });

  it('a role change applies to the next request', async () => {
    expect((await call(s.baseURL, '/api/users', as(PLAIN))).status).toBe(403);
    const res = await call(s.baseURL, '/api/users/apikey-plain', {
      ...as(ADMIN),
      method: 'PATCH',
      body: { role: 'admin' },
    });
    expect(json(res.body).role).toBe('admin');
    expect((await call(s.baseURL, '/api/users', as(PLAIN))).status).toBe(200);
    expect(json((await call(s.baseURL, '/api/whoami', as(PLAIN))).body).role).toBe('admin');
    await call(s.baseURL, '/api/users/apikey-plain', {
      ...as(ADMIN),
      method: 'PATCH',
      body: { role: 'user' },
    });
    expect((await call(s.baseURL, '/api/users', as(PLAIN))).status).toBe(403);
  });

  it('DELETE removes the user and its issued key stops working', async () => {
    const { api_key: key } = json(
      (
        await call(s.baseURL, '/api/users', {
          ...as(ADMIN),
          method: 'POST',
          body: { name: 'carol' },
        })
      ).body,
    ) as { api_key: string };
    expect((await call(s.baseURL, '/api/whoami', as(key))).status).toBe(200);
    const del = await call(s.baseURL, '/api/users/apikey-carol', {
      ...as(ADMIN),
      method: 'DELETE',
    });
    expect(del.status).toBe(204);
    expect((await call(s.baseURL, '/api/whoami', as(key))).status).toBe(401);
    expect((await call(s.baseURL, '/api/users/apikey-carol', as(ADMIN))).status).toBe(404);
  });
});
