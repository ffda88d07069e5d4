import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';

/**
 * What schema-driven testing found (issue 15): wrong types that changed state, framework errors
 * outside the envelope, 404 for a wrong method, and the smaller gaps. Real server, real port.
 */
const ADMIN = 'admin-key-for-strict-contract-tests';
const site = (): Promise<Buffer> => tarGz({ 'index.html': '<p>strict</p>' });

describe('the API contract, strictly', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      auth: { apiKeys: [{ key: ADMIN, name: 'root', role: 'admin' }] },
      runtime: { poolSize: 0 },
    });
    const first = await deploy(server.baseURL, ADMIN, { name: 'strict' }, await site());
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const second = await deploy(server.baseURL, ADMIN, { name: 'strict' }, await site());
    expect(second.status).toBe(200);
  });
  afterAll(() => server.stop());

  const json = (path: string, method: string, body: unknown) =>
    call(server.baseURL, path, { method, token: ADMIN, json: body });

  it.each([
    ['true', true],
    ['"1"', '1'],
    ['[1]', [1]],
  ])('refuses a rollback to version %s without rolling back', async (_label, version) => {
    const res = await json('/v1/apps/strict/rollback', 'POST', { version });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'bad_request' });
    const versions = await call(server.baseURL, '/v1/apps/strict/versions', { token: ADMIN });
    expect((versions.body as { items: unknown[] }).items).toHaveLength(2);
  });

  it('refuses wrongly typed ids rather than turning them into strings', async () => {
    const user = await json('/api/users', 'POST', { name: 12345 });
    expect(user.status).toBe(400);
    expect((await call(server.baseURL, '/api/users/apikey-12345', { token: ADMIN })).status).toBe(
      404,
    );
    const department = await json('/api/departments', 'POST', { id: 7, name: 'seven' });
    expect(department.status).toBe(400);
    expect((await call(server.baseURL, '/api/departments/7', { token: ADMIN })).status).toBe(404);
  });

  it('converts query numbers strictly: 1e3 and 10.0 are not integers', async () => {
    for (const offset of ['1e3', '10.0', ' 1', '0x10']) {
      const res = await call(server.baseURL, `/v1/apps?offset=${encodeURIComponent(offset)}`, {
        token: ADMIN,
      });
      expect(res.status, offset).toBe(400);
      expect(res.body).toMatchObject({ code: 'bad_request' });
    }
    const ok = await call(server.baseURL, '/v1/apps?offset=0&limit=1', { token: ADMIN });
    expect(ok.status).toBe(200);
    const huge = await call(server.baseURL, '/v1/apps?offset=1278181099624782626816', {
      token: ADMIN,
    });
    expect(huge.status).toBe(200);
    expect(huge.body).toMatchObject({ items: [], total: 1 });
  });

  it('answers a wrong method on a known path 405 with Allow, before authentication', async () => {
    const wrong = await call(server.baseURL, '/v1/apps/strict/versions', { method: 'DELETE' });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('GET');
    expect(wrong.body).toMatchObject({ code: 'method_not_allowed' });
    const blob = await call(server.baseURL, '/internal/sources/x.tar.gz', { method: 'PUT' });
    expect(blob.status).toBe(405);
    expect(blob.headers.get('allow')).toBe('GET, HEAD');
    // HEAD is served only where the spec names it.
    const head = await call(server.baseURL, '/v1/apps', { method: 'HEAD', token: ADMIN });
    expect(head.status).toBe(405);
    expect((await call(server.baseURL, '/nowhere', { method: 'DELETE' })).status).toBe(404);
  });

  it('reads and deletes a user whose id is 255 characters long', async () => {
    const id = `oidc-${'a'.repeat(250)}`;
    server.app.store.putUser({
      id,
      name: 'long',
      role: 'user',
      status: 'active',
      createdAt: new Date().toISOString(),
      updatedAt: new Date().toISOString(),
    });
    const path = `/api/users/${id}`;
    expect((await call(server.baseURL, path, { token: ADMIN })).status).toBe(200);
    expect((await call(server.baseURL, path, { method: 'DELETE', token: ADMIN })).status).toBe(204);
    const tooLong = await call(server.baseURL, `/api/users/${'b'.repeat(300)}`, { token: ADMIN });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body).toMatchObject({ code: 'bad_request' });
    const pastRouter = await call(server.baseURL, `/api/users/${'c'.repeat(3_000)}`, {
      token: ADMIN,
    });
    expect(pastRouter.status).toBe(414);
    expect(pastRouter.body).toEqual({
      code: 'bad_request',
      message: 'a path parameter is too long',
    });
  });

  it('accepts suspend and resume with a JSON content type and no body', async () => {
    const headers = { 'content-type': 'application/json' };
    const suspend = await call(server.baseURL, '/v1/apps/strict/suspend', {
      method: 'POST',
      token: ADMIN,
      headers,
    });
    expect(suspend.status, suspend.text).toBe(200);
    const resume = await call(server.baseURL, '/v1/apps/strict/resume', {
      method: 'POST',
      token: ADMIN,
      headers,
    });
    expect(resume.status, resume.text).toBe(200);
  });

  it('says a metadata part over 256 KiB is too large, and reads one sent as application/json', async () => {
    const big = await deploy(
      server.baseURL,
      ADMIN,
      { name: 'big', note: 'x'.repeat(300 * 1024) },
      await site(),
    );
    expect(big.status).toBe(400);
    expect(big.body).toMatchObject({
      code: 'bad_metadata',
      message: 'the metadata part is larger than 256 KiB',
    });
    const form = new FormData();
    form.set(
      'metadata',
      new Blob([JSON.stringify({ name: 'typed' })], { type: 'application/json' }),
    );
    form.set('source', new Blob([new Uint8Array(await site())], { type: 'application/gzip' }), 's');
    const typed = await fetch(`${server.baseURL}/v1/deploy`, {
      method: 'POST',
      body: form,
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    expect(typed.status, await typed.clone().text()).toBe(200);
  });

  it('pages share links with limit and offset', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await json('/v1/apps/strict/share-links', 'POST', {})).status).toBe(200);
    }
    const page = await call(server.baseURL, '/v1/apps/strict/share-links?limit=2&offset=1', {
      token: ADMIN,
    });
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({ total: 3 });
    expect((page.body as { items: unknown[] }).items).toHaveLength(2);
  });
});
