import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, json, removeDir, start, type Started } from './helpers.js';

const ADMIN = 'departments-test-admin-key';

describe('/api/departments', () => {
  let s: Started;
  const as = (token: string) => ({ token });

  beforeAll(async () => {
    s = await start({ apiKeys: [{ key: ADMIN, name: 'root', role: 'admin' }] });
  });
  afterAll(async () => {
    await s.close();
    removeDir(s.dataDir);
  });

  it('departments: create, read, patch, in-use refusal, delete', async () => {
    const created = await call(s.baseURL, '/api/departments', {
      ...as(ADMIN),
      method: 'POST',
      body: { id: 'platform', description: 'the platform team' },
    });
    expect(created.status).toBe(201);
    expect(json(created.body)).toMatchObject({
      id: 'platform',
      name: 'platform',
      description: 'the platform team',
    });
    expect(typeof json(created.body).created_at).toBe('string');

    const dup = await call(s.baseURL, '/api/departments', {
      ...as(ADMIN),
      method: 'POST',
      body: { id: 'platform' },
    });
    expect(dup.status).toBe(409);
    expect(json(dup.body).code).toBe('name_taken');
    const bad = await call(s.baseURL, '/api/departments', {
      ...as(ADMIN),
      method: 'POST',
      body: { id: 'Not_Valid' },
    });
    expect(bad.status).toBe(400);

    const patched = await call(s.baseURL, '/api/departments/platform', {
      ...as(ADMIN),
      method: 'PATCH',
      body: { name: 'Platform', description: null },
    });
    expect(patched.body).toEqual({
      id: 'platform',
      name: 'Platform',
      created_at: json(created.body).created_at,
    });
    expect(json((await call(s.baseURL, '/api/departments', as(ADMIN))).body)).toMatchObject({
      total: 1,
    });

    const dave = await call(s.baseURL, '/api/users', {
      ...as(ADMIN),
      method: 'POST',
      body: { name: 'dave', department: 'platform' },
    });
    expect(json(json(dave.body).user).department).toBe('platform');
    const inUse = await call(s.baseURL, '/api/departments/platform', {
      ...as(ADMIN),
      method: 'DELETE',
    });
    expect(inUse.status).toBe(409);
    expect(json(inUse.body).code).toBe('in_use');

    const cleared = await call(s.baseURL, '/api/users/apikey-dave', {
      ...as(ADMIN),
      method: 'PATCH',
      body: { department: null },
    });
    expect(json(cleared.body).department).toBeUndefined();
    expect(
      (await call(s.baseURL, '/api/departments/platform', { ...as(ADMIN), method: 'DELETE' }))
        .status,
    ).toBe(204);
    expect((await call(s.baseURL, '/api/departments/platform', as(ADMIN))).status).toBe(404);
  });
});
