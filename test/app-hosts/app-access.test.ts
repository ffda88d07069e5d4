import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Identity } from '../../src/auth/identity.js';
import { AppAccess, cookieName, type Refusal } from '../../src/app-hosts/app-access.js';
import { refuse } from '../../src/app-hosts/app-signin.js';
import { createMemoryStore } from '../../src/persistence/memory-store.js';
import type { Store } from '../../src/persistence/store.js';
import { AppGrants } from '../../src/services/app-grants.js';
import { app, link } from '../persistence/fixtures.js';

const TOKEN = 'c'.repeat(64);
const owner: Identity = {
  userId: 'alice',
  name: 'alice',
  role: 'user',
  scopes: [],
  mode: 'apikey',
};

/** The parts of a request the access check reads; a real one comes from the listener. */
function message(
  headers: Record<string, string>,
  url = '/',
  method = 'GET',
  socket: object = {},
): IncomingMessage {
  return { headers: { ...headers }, url, method, socket } as unknown as IncomingMessage;
}

describe('AppAccess: who reaches an app, and what reaches it', () => {
  let store: Store;
  let grants: AppGrants;
  let access: AppAccess;
  beforeEach(() => {
    store = createMemoryStore();
    store.putApp(app('open', { access: 'public' }));
    store.putApp(app('old'));
    store.putApp(app('shut', { access: 'private', url: 'http://shut.localhost' }));
    store.putApp(app('tls', { access: 'private', url: 'https://tls.example.org' }));
    // The memory store cannot add links through the service; the grants read the rows directly.
    store.addShareLink(link(TOKEN, 'shut'));
    store.addShareLink(link('d'.repeat(64), 'tls'));
    grants = new AppGrants(store);
    access = new AppAccess(store, grants);
    access.identifyWith(
      async (req) => (req.headers.authorization === 'Bearer owner-key' ? owner : undefined),
      async (req) =>
        ['Bearer owner-key', 'Bearer admin-key'].includes(req.headers.authorization ?? ''),
    );
  });

  it('passes anyone to a public app (and a row from before access existed), cutting only access cookies', async () => {
    for (const name of ['open', 'old']) {
      const req = message({
        cookie: `a=1; ${cookieName(name, false)}=x; slipway_access_other=y; b=2`,
        authorization: 'Basic Zm9v',
      });
      expect(await access.admit(name, req)).toEqual({ kind: 'pass' });
      expect(req.headers.cookie).toBe('a=1; b=2');
      expect(req.headers.authorization).toBe('Basic Zm9v');
    }
    const only = message({ cookie: 'slipway_access_open=x' });
    await access.admit('open', only);
    expect(only.headers).not.toHaveProperty('cookie');
  });

  it("cuts a Slipway bearer from a public app's request and keeps the app's own", async () => {
    const slipways = message({ authorization: 'Bearer admin-key' });
    expect(await access.admit('open', slipways)).toEqual({ kind: 'pass' });
    expect(slipways.headers).not.toHaveProperty('authorization');
    const apps = message({ authorization: 'Bearer apps-own-token' });
    expect(await access.admit('open', apps)).toEqual({ kind: 'pass' });
    expect(apps.headers.authorization).toBe('Bearer apps-own-token');
  });

  it('refuses a private app without a grant and says whether share links exist here', async () => {
    expect(await access.admit('shut', message({}))).toEqual({
      kind: 'refuse',
      why: 'private',
      backend: 'memory',
    });
    const stranger = message({ authorization: 'Bearer someone-else' });
    expect((await access.admit('shut', stranger)).kind).toBe('refuse');
  });

  it("passes the owner's bearer and removes it before the app sees it", async () => {
    const req = message({ authorization: 'Bearer owner-key', cookie: 'k=v' });
    expect(await access.admit('shut', req)).toEqual({ kind: 'pass' });
    expect(req.headers).not.toHaveProperty('authorization');
    expect(req.headers.cookie).toBe('k=v');
  });

  it('keeps the header when auth is disabled: there it is no Slipway credential', async () => {
    access.identifyWith(
      async () => ({ ...owner, role: 'admin', mode: 'none' }),
      async () => false,
    );
    const req = message({ authorization: 'Bearer apps-own-token' });
    expect(await access.admit('shut', req)).toEqual({ kind: 'pass' });
    expect(req.headers.authorization).toBe('Bearer apps-own-token');
  });

  it('spends a code on GET only, then lets the cookie in; Secure and __Host- under TLS', async () => {
    const linkRow = store.getShareLink(TOKEN);
    if (!linkRow) throw new Error('no link');
    const code = grants.issueCode(linkRow);
    const post = message({}, `/__slipway/access?code=${code}`, 'POST');
    expect(await access.admit('shut', post)).toMatchObject({ kind: 'refuse', why: 'code' });

    const fresh = grants.issueCode(linkRow);
    const got = await access.admit('shut', message({}, `/__slipway/access?code=${fresh}`));
    if (got.kind !== 'granted') throw new Error(`not granted: ${got.kind}`);
    expect(got.cookie).toMatch(
      /^slipway_access_shut=[\w-]+\.[\w-]{43}; Max-Age=86400; Path=\/; HttpOnly; SameSite=Lax$/,
    );
    const cookie = got.cookie.split(';')[0] ?? '';
    expect(await access.admit('shut', message({ cookie }))).toEqual({ kind: 'pass' });
    // A reload of the spent address by a visitor already in: back to the app, no new cookie.
    const reload = message({ cookie }, `/__slipway/access?code=${fresh}`);
    expect(await access.admit('shut', reload)).toEqual({ kind: 'granted', cookie: '' });

    const tlsLink = store.getShareLink('d'.repeat(64));
    if (!tlsLink) throw new Error('no link');
    const tls = await access.admit(
      'tls',
      message({}, `/__slipway/access?code=${grants.issueCode(tlsLink)}`),
    );
    expect(tls).toMatchObject({ kind: 'granted' });
    expect(tls.kind === 'granted' && tls.cookie).toMatch(/^__Host-slipway_access_tls=.*; Secure$/);

    // TLS on the connection itself (auth.tls): the same, whatever the stored URL says.
    const onTls = message({}, `/__slipway/access?code=${grants.issueCode(linkRow)}`, 'GET', {
      encrypted: true,
    });
    const direct = await access.admit('shut', onTls);
    expect(direct.kind === 'granted' && direct.cookie).toMatch(
      /^__Host-slipway_access_shut=[\w-]+\.[\w-]{43}; .*; Secure$/,
    );
    // Over TLS only the __Host- cookie counts: a plain one (planted over http) is ignored.
    const plain = message({ cookie }, '/', 'GET', { encrypted: true });
    expect((await access.admit('shut', plain)).kind).toBe('refuse');
    expect(plain.headers).not.toHaveProperty('cookie');
  });
});

describe('the sign-in answer of a private app', () => {
  let server: Server;
  let base: string;
  let setup: { backend: Store['backend']; why: Refusal } = { backend: 'sqlite', why: 'private' };
  beforeAll(async () => {
    server = createServer((req, res) =>
      refuse(res, req, { name: 'shut', backend: setup.backend }, setup.why),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('gives clients the error body and browsers a locked-down page, both 401', async () => {
    setup = { backend: 'sqlite', why: 'private' };
    const json = await fetch(base, { headers: { accept: 'application/json' } });
    expect(json.status).toBe(401);
    expect(await json.json()).toMatchObject({
      code: 'unauthenticated',
      message: expect.stringContaining('needs a share link'),
      details: { app: 'shut', access: 'private' },
    });
    const html = await fetch(base, { headers: { accept: 'text/html' } });
    expect(html.status).toBe(401);
    expect(html.headers.get('content-security-policy')).toBe(
      "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    const text = await html.text();
    expect(text).toContain('<h1>This app is private</h1>');
    expect(text).not.toMatch(/<script|<link|src=/);
    const head = await fetch(base, { method: 'HEAD', headers: { accept: 'text/html' } });
    expect(head.status).toBe(401);
    expect(await head.text()).toBe('');
  });

  it('says plainly when only bearer tokens can open it (memory store), and when a code is spent', async () => {
    setup = { backend: 'memory', why: 'private' };
    const memory = (await (await fetch(base)).json()) as { message: string };
    expect(memory.message).toContain('store.backend: memory');
    expect(memory.message).not.toContain('needs a share link');
    setup = { backend: 'sqlite', why: 'code' };
    const spent = await (await fetch(base, { headers: { accept: 'text/html' } })).text();
    expect(spent).toContain('already used or has expired');
  });
});
