import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';

const KEY = 'uploads-key-0123456789abcdef';

/** Names no file system holds are refused at upload, before any sandbox sees them. */
describe('tarball names the sandbox could not hold', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      auth: { apiKeys: [{ key: KEY, name: 'owner' }] },
      runtime: { poolSize: 1 },
    });
  });
  afterAll(() => server?.stop());

  it.each([
    ['a file name of 256 bytes', `${'a'.repeat(256)}.js`, /over 255 bytes/],
    ['a multi-byte name over 255 bytes', `${'é'.repeat(128)}`, /over 255 bytes/],
    ['a path over 1,024 bytes', `${'dir/'.repeat(260)}x.js`, /over 1024 bytes/],
  ])('refuses %s with 400, leaving no app', async (_, name, message) => {
    const res = await deploy(
      server.baseURL,
      KEY,
      { name: 'long-names' },
      await tarGz({ 'index.html': 'ok', [name]: 'x' }),
    );
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('bad_request');
    expect(String(res.body.message)).toMatch(message);
    const app = await call(server.baseURL, '/v1/apps/long-names', { token: KEY });
    expect(app.status).toBe(404);
  });

  it('still takes a 255-byte name', async () => {
    const name = `${'b'.repeat(252)}.js`;
    const res = await deploy(
      server.baseURL,
      KEY,
      { name: 'ok-names' },
      await tarGz({ 'index.html': 'ok', [name]: 'x' }),
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });
});
