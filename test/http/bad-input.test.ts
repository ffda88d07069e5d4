import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../support/server.js';

const ADMIN_KEY = 'admin-key-for-bad-input-tests';

describe('bad input gets a clear 4xx with the error body, never a 5xx', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      auth: { apiKeys: [{ key: ADMIN_KEY, name: 'root', role: 'admin' }] },
    });
  });
  afterAll(() => server.stop());

  const post = (body: string, contentType = 'application/json') =>
    call(server.baseURL, '/api/users', {
      method: 'POST',
      token: ADMIN_KEY,
      headers: { 'content-type': contentType },
      body,
    });

  it.each([
    ['truncated JSON', '{"name": "x"', 400],
    ['not JSON at all', '\u0000\u00ff garbage \u0001', 400],
    ['a JSON array', '[1,2,3]', 400],
    ['a JSON string', '"name"', 400],
    ['an unknown field', '{"name":"x","admin":true}', 400],
    ['a wrongly typed field', '{"name":{"first":"x"}}', 400],
    ['an empty body', '', 400],
  ])('%s → %i', async (_what, body, status) => {
    const res = await post(body);
    expect(res.status).toBe(status);
    expect(res.body).toMatchObject({ code: 'bad_request', message: expect.any(String) });
  });

  it('answers an oversized body with 413 payload_too_large', async () => {
    const res = await post(`{"name":"${'x'.repeat(2 * 1024 * 1024)}"}`);
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ code: 'payload_too_large' });
  });

  it('answers an unsupported content type with the error body', async () => {
    const res = await post('name=x', 'application/x-www-form-urlencoded');
    expect(res.status).toBe(415);
    expect(res.body).toMatchObject({
      code: 'unsupported_media_type',
      message: 'unsupported content type',
    });
  });

  it('stays up and serves normally after all of that', async () => {
    const res = await call(server.baseURL, '/api/whoami', { token: ADMIN_KEY });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ user_id: 'apikey-root', role: 'admin' });
  });
});
