import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { GO_INVALID, GO_NOT_POSITIVE, GO_VALID } from '../support/go-durations.js';
import { createLink, deployStatic, resolveLink, type ShareLinkBody } from '../support/share.js';

const ALICE = 'alice-guard-key-0123456789';
const PUBLIC_BASE = 'https://slipway.example.test:8443/';

describe('share links: public base URL, expires_in table, password guessing', () => {
  let server: TestServer;
  /** Where the server really listens; server.baseURL is the public (configured) one. */
  let base: string;
  beforeAll(async () => {
    server = await startTestServer({
      server: { baseURL: PUBLIC_BASE },
      auth: { apiKeys: [{ key: ALICE, name: 'alice' }] },
      runtime: { poolSize: 1 },
    });
    base = `http://127.0.0.1:${(server.app.server.address() as AddressInfo).port}`;
    await deployStatic(base, ALICE, 'guarded');
  });
  afterAll(() => server.stop());

  const post = (json: unknown) =>
    call(base, '/v1/apps/guarded/share-links', { method: 'POST', token: ALICE, json });

  it('builds link URLs from server.baseURL', async () => {
    const link = await createLink(base, ALICE, 'guarded');
    expect(link.url).toBe(`https://slipway.example.test:8443/share/${link.token}`);
    const listed = await call(base, '/v1/apps/guarded/share-links', { token: ALICE });
    const items = (listed.body as { items: ShareLinkBody[] }).items;
    expect(items.find((i) => i.token === link.token)?.url).toBe(link.url);
  });

  describe('expires_in through POST /v1/apps/{id}/share-links agrees with Go', () => {
    it.each(GO_VALID)('%j is accepted: expires_at = created_at + %d ns', async (text, nanos) => {
      const res = await post({ expires_in: text });
      expect(res.status, res.text).toBe(200);
      const link = res.body as ShareLinkBody;
      expect(link.expires_in).toBe(text);
      // Date keeps whole milliseconds: sub-millisecond durations truncate.
      const ms = Math.trunc(Number(nanos) / 1e6);
      const expected = new Date(Date.parse(link.created_at) + ms).toISOString();
      expect(link.expires_at).toBe(expected);
    });

    it.each(GO_NOT_POSITIVE)('%j is refused as not positive', async (text) => {
      const res = await post({ expires_in: text });
      expect(res).toMatchObject({ status: 400, body: { code: 'bad_expires_in' } });
      expect((res.body as { message: string }).message).toContain('positive');
    });

    it.each(GO_INVALID)('%j is refused as not a Go duration', async (text) => {
      const res = await post({ expires_in: text });
      expect(res).toMatchObject({ status: 400, body: { code: 'bad_expires_in' } });
      expect((res.body as { message: string }).message).toContain('not a Go duration');
    });

    it('treats an empty expires_in as no expiry', async () => {
      const res = await post({ expires_in: '' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ expires_at: null });
      expect(res.body).not.toHaveProperty('expires_in');
    });
  });

  it('locks a link after 5 wrong passwords: 429 with Retry-After, even for the right one', async () => {
    const link = await createLink(base, ALICE, 'guarded', { password: 'right one' });
    const other = await createLink(base, ALICE, 'guarded', { password: 'right one' });
    for (let i = 0; i < 5; i += 1) {
      const res = await resolveLink(base, link.token, `wrong ${i}`);
      expect(res, `guess ${i}`).toMatchObject({ status: 401, body: { code: 'invalid_password' } });
    }
    for (const password of ['wrong 5', 'right one']) {
      const res = await resolveLink(base, link.token, password);
      expect(res, password).toMatchObject({ status: 429, body: { code: 'too_many_attempts' } });
      const retryAfter = Number(res.headers.get('retry-after'));
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(15 * 60);
    }
    // A GET reveals nothing new, and another link of the same app is not affected.
    expect(await resolveLink(base, link.token)).toMatchObject({ status: 401 });
    expect(await resolveLink(base, other.token, 'right one')).toMatchObject({ status: 200 });
  });

  it('counts concurrent guesses too: of 8 at once, 5 are checked and 3 refused', async () => {
    const link = await createLink(base, ALICE, 'guarded', { password: 'right one' });
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => resolveLink(base, link.token, `guess ${i}`)),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429, 429]);
    expect(await resolveLink(base, link.token, 'right one')).toMatchObject({ status: 429 });
  });
});
