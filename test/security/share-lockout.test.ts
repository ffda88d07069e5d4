/**
 * Issue #9 item 19: five wrong passwords from anyone locked a share link for everyone, its owner
 * included, for 15 minutes. Guesses now count per link AND client address. Issue #25 item 4: the
 * per-link ceiling that replaced it let 25 addresses lock the link for everyone again; a link
 * under attack now slows guessers down instead of refusing the right password to a new visitor.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PACE_POLICY } from '../../src/services/link-pace.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createLink, deployStatic } from '../support/share.js';

const OWNER = 'owner-lockout-key-0123456789';
const PASSWORD = 'correct horse battery staple';
/** PER_CLIENT_POLICY.maxFailures in src/services/share-guesses.ts. */
const PER_CLIENT = 5;
const { paceMs: PACE, maxWaitMs: MAX_WAIT } = DEFAULT_PACE_POLICY;

/** POSTs a password to the public resolve route from a chosen loopback source address. */
function guess(
  base: string,
  token: string,
  password: string,
  from: string,
): Promise<{ status: number; body: Record<string, unknown>; retryAfter?: string }> {
  const url = new URL(`/api/share/${token}`, base);
  const body = JSON.stringify({ password });
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        localAddress: from,
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          const retry = res.headers['retry-after'];
          resolve({
            status: res.statusCode ?? 0,
            body: JSON.parse(text) as Record<string, unknown>,
            ...(typeof retry === 'string' ? { retryAfter: retry } : {}),
          });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('share-link password lockout', () => {
  let server: TestServer;
  let base: string;
  beforeAll(async () => {
    server = await startTestServer({ auth: { apiKeys: [{ key: OWNER, name: 'owner' }] } });
    base = server.baseURL;
    await deployStatic(base, OWNER, 'locked');
  });
  afterAll(() => server.stop());

  it("one address's wrong guesses lock that address out, not the owner at another", async () => {
    const link = await createLink(base, OWNER, 'locked', { password: PASSWORD });
    for (let i = 0; i < PER_CLIENT; i += 1) {
      expect((await guess(base, link.token, `wrong ${i}`, '127.0.0.2')).status).toBe(401);
    }
    const locked = await guess(base, link.token, PASSWORD, '127.0.0.2');
    expect(locked.status).toBe(429);
    expect(locked.body).toMatchObject({ code: 'too_many_attempts' });
    expect(locked.retryAfter).toMatch(/^[1-9]\d*$/);

    const owner = await guess(base, link.token, PASSWORD, '127.0.0.3');
    expect(owner.status).toBe(200);
    expect(owner.body).toMatchObject({ name: 'locked' });
  });

  it('lets a new visitor in after 25 addresses × 4 wrong passwords, and slows the guessers', async () => {
    const link = await createLink(base, OWNER, 'locked', { password: PASSWORD });
    // The red team's spread, each address under its own limit.
    for (let a = 0; a < 25; a += 1) {
      const from = `127.0.1.${a + 1}`;
      const statuses = await Promise.all(
        Array.from({ length: PER_CLIENT - 1 }, (_, i) => guess(base, link.token, `no ${i}`, from)),
      );
      // Once the link is under attack, an address's first guess is checked, the others refused.
      expect(statuses[0]?.status).toBe(401);
      expect(statuses.every((s) => s.status === 401 || s.status === 429)).toBe(true);
    }
    // Issue #25 item 4: this was 429 for 900 s, for every visitor: anyone could lock a link.
    const fresh = await guess(base, link.token, PASSWORD, '127.0.2.1');
    expect(fresh.status).toBe(200);
    expect(fresh.body).toMatchObject({ name: 'locked' });

    // Under attack, an address that guessed wrong on the link gets no more guesses...
    const again = await guess(base, link.token, 'one more', '127.0.1.1');
    expect(again.status).toBe(429);
    expect(again.body).toMatchObject({ code: 'too_many_attempts' });
    expect(Number(again.retryAfter)).toBeGreaterThan(60);
    // ... new addresses' guesses are checked one at a time, PACE apart...
    const started = performance.now();
    const paced = await Promise.all(
      Array.from({ length: 3 }, (_, i) => guess(base, link.token, `new ${i}`, `127.0.3.${i + 1}`)),
    );
    expect(paced.map((f) => f.status)).toEqual([401, 401, 401]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(2 * PACE - 50);
    // ... and a queue of them longer than MAX_WAIT is refused at once rather than held.
    const flood = await Promise.all(
      Array.from({ length: MAX_WAIT / PACE + 3 }, (_, i) =>
        guess(base, link.token, `flood ${i}`, `127.0.4.${i + 1}`),
      ),
    );
    expect(flood.filter((f) => f.status === 429).length).toBeGreaterThanOrEqual(2);
    expect(flood.every((f) => f.status === 401 || f.status === 429)).toBe(true);
  }, 180_000);
});
