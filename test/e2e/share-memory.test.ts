import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { deployStatic } from '../support/share.js';

const ALICE = 'alice-memory-key-0123456789';
const TOKEN = 'ab'.repeat(32);

describe('share links on the memory store backend', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      store: { backend: 'memory' },
      auth: { apiKeys: [{ key: ALICE, name: 'alice' }] },
      runtime: { poolSize: 1 },
    });
    // The app exists: the error is about the store, not a missing app.
    await deployStatic(server.baseURL, ALICE, 'volatile');
  });
  afterAll(() => server.stop());

  it.each([
    ['POST', '/v1/apps/volatile/share-links', ALICE],
    ['GET', '/v1/apps/volatile/share-links', ALICE],
    ['DELETE', `/api/share-links/${TOKEN}`, ALICE],
    ['GET', `/api/share/${TOKEN}`, undefined],
    ['POST', `/api/share/${TOKEN}`, undefined],
  ] as const)('%s %s says share links need store.backend: sqlite', async (method, path, token) => {
    const res = await call(server.baseURL, path, { method, token });
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ code: 'share_links_unavailable' });
    expect((res.body as { message: string }).message).toContain('store.backend: sqlite');
  });

  it('says so on the public page too', async () => {
    const page = await call(server.baseURL, `/share/${TOKEN}`);
    expect(page.status).toBe(503);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.text).toContain('store.backend: sqlite');
  });
});
