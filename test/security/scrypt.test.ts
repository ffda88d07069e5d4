/**
 * Issue #25 item 5: 200 concurrent password link creations on one app took another tenant's
 * password check from 0.42 s to 48.6 s, all of them queued for the same two hashing threads. The
 * queue is now fair between users and bounded per user and overall: the burst is mostly refused
 * with 429, and the other tenant's check waits for a hash or two, not for the burst.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HASH_QUEUE_LIMITS } from '../../src/services/hash-queue.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { createLink, deployStatic, resolveLink } from '../support/share.js';

const ALICE = 'alice-scrypt-key-0123456789';
const BOB = 'bob-scrypt-key-0123456789';
const BURST = 400;

describe("one tenant's password burst and another's password check", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      auth: {
        apiKeys: [
          { key: ALICE, name: 'alice' },
          { key: BOB, name: 'bob' },
        ],
      },
      // 300 connections opened at once from one address: not what this test is about.
      server: { maxPendingConnectionsPerAddress: 10_000 },
      runtime: { poolSize: 1 },
    });
    await deployStatic(server.baseURL, ALICE, 'burst');
    await deployStatic(server.baseURL, BOB, 'quiet');
  });
  afterAll(() => server.stop());

  it(`answers the other tenant's check promptly during ${BURST} concurrent creates`, async () => {
    const link = await createLink(server.baseURL, BOB, 'quiet', { password: 'bob password' });
    let firstAnswer: () => void = () => undefined;
    const answered = new Promise<void>((resolve) => (firstAnswer = resolve));
    const creates = Array.from({ length: BURST }, (_, i) =>
      call(server.baseURL, '/v1/apps/burst/share-links', {
        method: 'POST',
        token: ALICE,
        json: { password: `password number ${i}` },
      }).finally(() => firstAnswer()),
    );
    // Once one create is answered, the server has the burst in hand.
    await answered;
    const started = performance.now();
    const check = await resolveLink(server.baseURL, link.token, 'bob password');
    const seconds = (performance.now() - started) / 1000;
    expect(check.status, check.text).toBe(200);
    // Unfair or unbounded, the check waits for hundreds of hashes (about 10 s here); now a few.
    expect(seconds).toBeLessThan(2.5);

    const results = await Promise.all(creates);
    const made = results.filter((r) => r.status === 200).length;
    const refused = results.filter((r) => r.status === 429);
    expect(made).toBeGreaterThanOrEqual(HASH_QUEUE_LIMITS.perKey);
    expect(made + refused.length).toBe(BURST);
    for (const r of refused) {
      expect(r.body).toMatchObject({ code: 'too_many_attempts' });
      expect(r.headers.get('retry-after')).toBe('1');
    }
    const list = await call(server.baseURL, '/v1/apps/burst/share-links', { token: ALICE });
    expect(list.body).toMatchObject({ total: made });
  }, 300_000);
});
