/**
 * Issue #9 item 9a: 300 concurrent share-link creates with passwords filled libuv's thread pool
 * with scrypt, and another app's egress DNS lookups timed out behind them. Hashing now takes at
 * most SCRYPT_CONCURRENCY threads; the rest of the pool stays free for lookups and file I/O.
 */
import { lookup } from 'node:dns/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { deployStatic } from '../support/share.js';

const KEY = 'alice-scrypt-key-0123456789';
const CREATES = 300;

describe('password hashing leaves the thread pool usable', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      auth: { apiKeys: [{ key: KEY, name: 'alice' }] },
      // 300 connections opened at once from one address: not what this test is about.
      server: { maxPendingConnectionsPerAddress: 10_000 },
      runtime: { poolSize: 1 },
    });
    await deployStatic(server.baseURL, KEY, 'hashed');
  });
  afterAll(() => server.stop());

  it(`answers DNS lookups promptly during ${CREATES} concurrent password creates`, async () => {
    let pending = CREATES;
    const creates = Array.from({ length: CREATES }, (_, i) =>
      call(server.baseURL, '/v1/apps/hashed/share-links', {
        method: 'POST',
        token: KEY,
        json: { password: `password number ${i}` },
      }).finally(() => (pending -= 1)),
    );
    // Let the server take the requests and queue their hashes, then look up while they run.
    await new Promise((r) => setTimeout(r, 500));
    const slowest = { ms: 0, pendingAt: 0 };
    let lookups = 0;
    while (pending > CREATES / 3 && lookups < 50) {
      const started = performance.now();
      await lookup('localhost');
      const ms = performance.now() - started;
      if (ms > slowest.ms) Object.assign(slowest, { ms, pendingAt: pending });
      lookups += 1;
      await new Promise((r) => setTimeout(r, 100));
    }
    const results = await Promise.all(creates);
    // The lookups ran while at least a third of the creates were still waiting for their hash.
    expect(lookups).toBeGreaterThan(3);
    expect(slowest.ms, `slowest lookup, with ${slowest.pendingAt} creates pending`).toBeLessThan(
      2000,
    );
    expect(results.map((r) => r.status)).toEqual(Array(CREATES).fill(200));
    const list = await call(server.baseURL, '/v1/apps/hashed/share-links', { token: KEY });
    expect(list.body).toMatchObject({ total: CREATES });
  }, 300_000);
});
