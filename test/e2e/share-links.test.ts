import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../support/server.js';
import {
  createLink,
  deployStatic,
  resolveLink,
  waitUntilGone,
  type ShareLinkBody,
} from '../support/share.js';

const ALICE = 'alice-share-key-0123456789';
const BOB = 'bob-share-key-0123456789';
const ROOT = 'root-share-key-0123456789';
const keys = [
  { key: ALICE, name: 'alice' },
  { key: BOB, name: 'bob' },
  { key: ROOT, name: 'root', role: 'admin' as const },
];

describe('share links over real HTTP', () => {
  let server: TestServer;
  let base: string;
  let appUrl: string;
  beforeAll(async () => {
    server = await startTestServer({ auth: { apiKeys: keys }, runtime: { poolSize: 1 } });
    base = server.baseURL;
    appUrl = String((await deployStatic(base, ALICE, 'shared')).url);
  });
  afterAll(() => server.stop());

  const list = (token: string, app = 'shared') =>
    call(base, `/v1/apps/${app}/share-links`, { token });
  const revoke = (token: string, link: string) =>
    call(base, `/api/share-links/${link}`, { method: 'DELETE', token });

  it('creates an open link that never expires and resolves it without a bearer token', async () => {
    const res = await call(base, '/v1/apps/shared/share-links', { method: 'POST', token: ALICE });
    expect(res.status).toBe(200);
    const link = res.body as ShareLinkBody;
    expect(link).toMatchObject({ app_id: 'shared', has_password: false, expires_at: null });
    expect(link.token).toMatch(/^[0-9a-f]{64}$/);
    expect(link).not.toHaveProperty('expires_in');
    expect(link.url).toBe(`${base}/share/${link.token}`);

    const view = { name: 'shared', status: 'Ready', url: appUrl, access: 'public' };
    expect(await resolveLink(base, link.token)).toMatchObject({ status: 200, body: view });
    const posted = await call(base, `/api/share/${link.token}`, { method: 'POST' });
    expect(posted).toMatchObject({ status: 200, body: view });
    // A password sent to an open link is ignored.
    expect(await resolveLink(base, link.token, 'whatever')).toMatchObject({ status: 200 });
  });

  it('answers 401 on a protected link until the right password is POSTed', async () => {
    const link = await createLink(base, ALICE, 'shared', { password: 'open sesame' });
    expect(link.has_password).toBe(true);

    const get = await resolveLink(base, link.token);
    expect(get.status).toBe(401);
    expect(get.body).toMatchObject({ code: 'password_required' });
    expect((get.body as { message: string }).message).toContain('POST');
    const none = await call(base, `/api/share/${link.token}`, { method: 'POST', json: {} });
    expect(none).toMatchObject({ status: 401, body: { code: 'password_required' } });
    const wrong = await resolveLink(base, link.token, 'open sesam');
    expect(wrong).toMatchObject({ status: 401, body: { code: 'invalid_password' } });
    const right = await resolveLink(base, link.token, 'open sesame');
    expect(right).toMatchObject({ status: 200, body: { name: 'shared', url: appUrl } });
    expect(Object.keys(right.body as object).sort()).toEqual(['access', 'name', 'status', 'url']);

    const listed = await list(ALICE);
    expect(listed.status).toBe(200);
    expect(listed.text).not.toContain('open sesame');
    expect(listed.text).not.toContain('scrypt');
    const items = (listed.body as { items: ShareLinkBody[] }).items;
    expect(items.find((i) => i.token === link.token)).toMatchObject({ has_password: true });
    expect(Object.keys(items[0] ?? {})).not.toContain('password_hash');
  });

  it('refuses bad bodies with 400', async () => {
    const post = (json: unknown) =>
      call(base, '/v1/apps/shared/share-links', { method: 'POST', token: ALICE, json });
    expect(await post({ password: '' })).toMatchObject({
      status: 400,
      body: { code: 'bad_request' },
    });
    expect(await post({ password: 42 })).toMatchObject({ status: 400 });
    expect(await post({ expires_in: 60 })).toMatchObject({
      status: 400,
      body: { code: 'bad_expires_in' },
    });
    expect(await post([1])).toMatchObject({ status: 400, body: { code: 'bad_request' } });
  });

  it('expires a link once expires_in has passed', async () => {
    const short = await createLink(base, ALICE, 'shared', { expires_in: '300ms' });
    expect(short.expires_in).toBe('300ms');
    expect(Date.parse(String(short.expires_at)) - Date.parse(short.created_at)).toBe(300);
    const gone = await waitUntilGone(base, short.token);
    expect(gone).toMatchObject({ status: 404, body: { code: 'not_found' } });
    const tokens = (await list(ALICE)).text;
    expect(tokens).not.toContain(short.token);

    const long = await createLink(base, ALICE, 'shared', { expires_in: '1h' });
    expect(Date.parse(String(long.expires_at)) - Date.parse(long.created_at)).toBe(3_600_000);
    expect(await resolveLink(base, long.token)).toMatchObject({ status: 200 });
    expect((await list(ALICE)).text).toContain(long.token);
  });

  it('revokes a link: 204, then 404 on resolve, list and a second revoke', async () => {
    const link = await createLink(base, ALICE, 'shared');
    const res = await revoke(ALICE, link.token);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect(await resolveLink(base, link.token)).toMatchObject({ status: 404 });
    expect((await list(ALICE)).text).not.toContain(link.token);
    expect(await revoke(ALICE, link.token)).toMatchObject({
      status: 404,
      body: { code: 'not_found' },
    });
  });

  it('keeps other users out: 404 on create, list and revoke; the link still works', async () => {
    const link = await createLink(base, ALICE, 'shared');
    const create = await call(base, '/v1/apps/shared/share-links', { method: 'POST', token: BOB });
    expect(create).toMatchObject({ status: 404, body: { code: 'not_found' } });
    expect(await list(BOB)).toMatchObject({ status: 404, body: { code: 'not_found' } });
    expect(await revoke(BOB, link.token)).toMatchObject({
      status: 404,
      body: { code: 'not_found' },
    });
    expect(await resolveLink(base, link.token)).toMatchObject({ status: 200 });
  });

  it('lets an admin list and revoke, but not create on an app it does not own', async () => {
    const link = await createLink(base, ALICE, 'shared');
    const listed = await list(ROOT);
    expect(listed.status).toBe(200);
    const body = listed.body as { items: ShareLinkBody[]; total: number };
    expect(body.items.map((i) => i.token)).toContain(link.token);
    expect(body.total).toBe(body.items.length);
    const create = await call(base, '/v1/apps/shared/share-links', { method: 'POST', token: ROOT });
    expect(create).toMatchObject({ status: 404, body: { code: 'not_found' } });
    expect(await revoke(ROOT, link.token)).toMatchObject({ status: 204 });
    expect(await resolveLink(base, link.token)).toMatchObject({ status: 404 });
  });

  it('needs a bearer token for create, list and revoke', async () => {
    const link = await createLink(base, ALICE, 'shared');
    for (const [method, path] of [
      ['POST', '/v1/apps/shared/share-links'],
      ['GET', '/v1/apps/shared/share-links'],
      ['DELETE', `/api/share-links/${link.token}`],
    ] as const) {
      const res = await call(base, path, { method });
      expect(res.status, `${method} ${path}`).toBe(401);
    }
    expect(await resolveLink(base, link.token)).toMatchObject({ status: 200 });
  });

  it('answers unknown and malformed tokens 404', async () => {
    const unknown = randomBytes(32).toString('hex');
    for (const token of [unknown, 'not-a-token', unknown.toUpperCase(), `${unknown}00`]) {
      expect(await resolveLink(base, token), token).toMatchObject({
        status: 404,
        body: { code: 'not_found' },
      });
      expect(await resolveLink(base, token, 'pw'), token).toMatchObject({ status: 404 });
    }
    expect(await revoke(ALICE, unknown)).toMatchObject({ status: 404 });
  });

  it('revokes links with their app; a new app under the same name inherits none', async () => {
    await deployStatic(base, ALICE, 'short-lived');
    const open = await createLink(base, ALICE, 'short-lived');
    const locked = await createLink(base, ALICE, 'short-lived', { password: 'pw-1' });
    const del = await call(base, '/v1/apps/short-lived', { method: 'DELETE', token: ALICE });
    expect(del.status).toBe(204);
    expect(await resolveLink(base, open.token)).toMatchObject({ status: 404 });
    expect(await resolveLink(base, locked.token, 'pw-1')).toMatchObject({ status: 404 });

    // Same owner, same name: the old links stay dead.
    await deployStatic(base, ALICE, 'short-lived');
    expect(await resolveLink(base, open.token)).toMatchObject({ status: 404 });
    expect(await list(ALICE, 'short-lived')).toMatchObject({ body: { items: [], total: 0 } });
    expect(await revoke(ALICE, open.token)).toMatchObject({ status: 404 });

    // Another owner under the name later: still nothing of the old links.
    await call(base, '/v1/apps/short-lived', { method: 'DELETE', token: ALICE });
    await deployStatic(base, BOB, 'short-lived');
    expect(await resolveLink(base, open.token)).toMatchObject({ status: 404 });
    expect(await resolveLink(base, locked.token, 'pw-1')).toMatchObject({ status: 404 });
    expect(await list(BOB, 'short-lived')).toMatchObject({ body: { items: [], total: 0 } });
  });
});
