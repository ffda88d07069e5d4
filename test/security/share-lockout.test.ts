/**
 * Issue #9 item 19: five wrong passwords from anyone locked a share link for everyone, its owner
 * included, for 15 minutes. Guesses now count per link AND client address; a much higher per-link
 * ceiling still stops a guesser spread over many addresses.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { createLink, deployStatic } from '../support/share.js';

const OWNER = 'owner-lockout-key-0123456789';
const PASSWORD = 'correct horse battery staple';
/** PER_CLIENT_POLICY.maxFailures and PER_LINK_POLICY.maxFailures in src/services/share-guesses.ts. */
const PER_CLIENT = 5;
const PER_LINK = 100;

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

  it('still stops a guesser spread over many addresses at the per-link ceiling', async () => {
    const link = await createLink(base, OWNER, 'locked', { password: PASSWORD });
    const addresses = PER_LINK / PER_CLIENT;
    for (let a = 0; a < addresses; a += 1) {
      const from = `127.0.1.${a + 1}`;
      const statuses = await Promise.all(
        Array.from({ length: PER_CLIENT }, (_, i) => guess(base, link.token, `no ${i}`, from)),
      );
      expect(statuses.map((s) => s.status)).toEqual(Array(PER_CLIENT).fill(401));
    }
    const fresh = await guess(base, link.token, PASSWORD, '127.0.2.1');
    expect(fresh.status).toBe(429);
    expect(fresh.body).toMatchObject({ code: 'too_many_attempts' });
  }, 120_000);
});
