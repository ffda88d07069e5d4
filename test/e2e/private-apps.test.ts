import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { createLink } from '../support/share.js';
import { tarGz } from '../support/tarball.js';

const ALICE = 'alice-private-key-0123456789';
const BOB = 'bob-private-key-0123456789';
const ROOT = 'root-private-key-0123456789';
const keys = [
  { key: ALICE, name: 'alice' },
  { key: BOB, name: 'bob' },
  { key: ROOT, name: 'root', role: 'admin' as const },
];

/** Answers with what it was sent, so a test sees which headers reached the app; echoes upgrades. */
const ECHO_APP = `
const http = require('node:http');
const server = http.createServer((req, res) => {
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({
    app: process.env.APP_MARK,
    path: req.url,
    cookie: req.headers.cookie ?? null,
    authorization: req.headers.authorization ?? null,
  }));
});
server.on('upgrade', (req, socket) => {
  socket.write('HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: echo\\r\\nConnection: Upgrade\\r\\n\\r\\n');
  socket.on('data', (chunk) => socket.write('echo:' + chunk));
});
server.listen(process.env.PORT);
`;

type Seen = { app: string; path: string; cookie: string | null; authorization: string | null };

describe('private apps over real HTTP', () => {
  let server: TestServer;
  let base: string;
  let port: number;
  const urls: Record<string, string> = {};

  const deployEcho = async (name: string, metadata: Record<string, unknown> = {}) => {
    const source = await tarGz({
      'package.json': JSON.stringify({ name, main: 'server.js' }),
      'server.js': ECHO_APP,
    });
    const env = [{ name: 'APP_MARK', value: name }];
    const res = await deploy(base, ALICE, { name, env, ...metadata }, source);
    expect([200, 202], JSON.stringify(res.body)).toContain(res.status);
    const app = await waitForPhase(base, ALICE, name, ['Ready']);
    urls[name] = String(app.url);
    return app;
  };
  /** A request to an app's host with these headers. */
  const visit = (name: string, headers: Record<string, string> = {}, path = '/') =>
    fetchApp(`${urls[name]}${path}`, { headers });
  const seen = (body: string): Seen => JSON.parse(body) as Seen;
  /** Spends a grant URL on its host; returns the `name=value` of the cookie it set. */
  const redeem = async (grantUrl: string): Promise<string> => {
    const res = await fetchApp(grantUrl);
    expect(res.status, res.body).toBe(303);
    expect(res.headers.location).toBe('/');
    const cookie = String(res.headers['set-cookie']);
    return cookie.split(';')[0] ?? '';
  };
  const unlock = async (token: string, password?: string) => {
    const res =
      password === undefined
        ? await call(base, `/api/share/${token}`)
        : await call(base, `/api/share/${token}`, { method: 'POST', json: { password } });
    expect(res.status, res.text).toBe(200);
    return res.body as { access: string; url: string; grant_url?: string };
  };

  beforeAll(async () => {
    server = await startTestServer({ auth: { apiKeys: keys }, runtime: { poolSize: 2 } });
    base = server.baseURL;
    port = Number(new URL(base).port);
    const secret = await deployEcho('secret', { access: 'private' });
    expect(secret.access).toBe('private');
    await deployEcho('other', { access: 'private' });
  }, 120_000);
  afterAll(() => server?.stop());

  it('answers 401 without a grant: JSON for clients, a small HTML page for browsers', async () => {
    const json = await visit('secret');
    expect(json.status).toBe(401);
    expect(json.headers['content-type']).toMatch(/^application\/json/);
    expect(json.headers['www-authenticate']).toBe('Bearer realm="secret"');
    const body = JSON.parse(json.body) as { code: string; message: string; details: unknown };
    expect(body).toMatchObject({
      code: 'unauthenticated',
      details: { app: 'secret', access: 'private' },
    });
    expect(body.message).toContain('private');
    expect(body.message).toContain('share link');

    const html = await visit('secret', { accept: 'text/html,application/xhtml+xml' });
    expect(html.status).toBe(401);
    expect(html.headers['content-type']).toMatch(/^text\/html/);
    expect(html.headers['content-security-policy']).toContain("default-src 'none'");
    expect(html.headers['cache-control']).toBe('no-store');
    expect(html.body).toContain('This app is private');
    expect(html.body).not.toContain('<script');
    // Nothing of the app leaks: not its answer, not a path it serves.
    expect((await visit('secret', {}, '/anything?x=1')).status).toBe(401);
    expect((await visit('secret', { authorization: 'Bearer not-a-key' })).status).toBe(401);
  });

  it("lets the owner's and an admin's bearer in, and the app never sees the token", async () => {
    for (const key of [ALICE, ROOT]) {
      const res = await visit('secret', { authorization: `Bearer ${key}`, cookie: 'theme=dark' });
      expect(res.status, res.body).toBe(200);
      expect(seen(res.body)).toMatchObject({
        app: 'secret',
        authorization: null,
        cookie: 'theme=dark',
      });
    }
    const bob = await visit('secret', { authorization: `Bearer ${BOB}` });
    expect(bob.status).toBe(401);
  });

  it('refuses a websocket upgrade without a grant and tunnels the owner', async () => {
    const upgrade = (auth: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1');
        let got = '';
        socket.on('error', reject);
        socket.on('close', () => resolve(got));
        socket.on('data', (chunk) => {
          got += chunk.toString();
          if (got.includes('101 Switching') && !got.includes('echo:')) socket.write('ping');
          // A refusal is a whole answer (no body); a front door may keep the connection open.
          if (got.includes('echo:ping') || /^HTTP\/1\.1 4\d\d [^]*\r\n\r\n/.test(got)) {
            socket.destroy();
          }
        });
        socket.write(
          `GET /ws HTTP/1.1\r\nHost: ${new URL(urls.secret ?? '').host}\r\n${auth}` +
            'Connection: Upgrade\r\nUpgrade: echo\r\n\r\n',
        );
      });
    const refused = await upgrade('');
    expect(refused).toMatch(/^HTTP\/1\.1 401 Unauthorized/);
    expect(refused).not.toContain('101');
    const owner = await upgrade(`Authorization: Bearer ${ALICE}\r\n`);
    expect(owner).toContain('101 Switching Protocols');
    expect(owner).toContain('echo:ping');
  });

  it('lets a visitor in through a password link: single-use code, host-only cookie', async () => {
    const link = await createLink(base, ALICE, 'secret', { password: 'hunter2 horse' });
    expect((await call(base, `/api/share/${link.token}`)).status).toBe(401);
    const view = await unlock(link.token, 'hunter2 horse');
    expect(view).toMatchObject({ access: 'private', url: urls.secret });
    const grantUrl = String(view.grant_url);
    expect(grantUrl.startsWith(`${urls.secret}/__slipway/access?code=`)).toBe(true);

    const first = await fetchApp(grantUrl);
    expect(first.status).toBe(303);
    expect(first.headers.location).toBe('/');
    const setCookie = String(first.headers['set-cookie']);
    expect(setCookie).toMatch(
      /^slipway_access_secret=[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}; Max-Age=\d+; Path=\/; HttpOnly; SameSite=Lax$/,
    );
    expect(setCookie).not.toContain('Domain');
    expect(setCookie).not.toContain(link.token);
    expect(setCookie).not.toContain('hunter2');
    const cookie = setCookie.split(';')[0] ?? '';

    // The code is spent: a second use is refused, and says so.
    const again = await fetchApp(grantUrl, { headers: { accept: 'text/html' } });
    expect(again.status).toBe(401);
    expect(again.body).toContain('already used or has expired');

    const inside = await visit('secret', { cookie: `theme=dark; ${cookie}` });
    expect(inside.status, inside.body).toBe(200);
    // The app sees the visitor's own cookies, never the grant.
    expect(seen(inside.body)).toMatchObject({ app: 'secret', cookie: 'theme=dark' });
    const deep = await visit('secret', { cookie }, '/deep/path?q=1');
    expect(seen(deep.body)).toMatchObject({ path: '/deep/path?q=1', cookie: null });
  });

  it("is useless on another app's host, under either cookie name", async () => {
    const link = await createLink(base, ALICE, 'secret');
    const cookie = await redeem(String((await unlock(link.token)).grant_url));
    const grant = cookie.slice(cookie.indexOf('=') + 1);
    expect((await visit('secret', { cookie })).status).toBe(200);
    expect((await visit('other', { cookie })).status).toBe(401);
    expect((await visit('other', { cookie: `slipway_access_other=${grant}` })).status).toBe(401);
    // A code minted for one app cannot be spent on another's host.
    const code = new URL(String((await unlock(link.token)).grant_url)).search;
    const elsewhere = await fetchApp(`${urls.other}/__slipway/access${code}`);
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.headers['set-cookie']).toBeUndefined();
  });

  it('stops the cookie on the next request once the link is revoked', async () => {
    const link = await createLink(base, ALICE, 'secret');
    const cookie = await redeem(String((await unlock(link.token)).grant_url));
    expect((await visit('secret', { cookie })).status).toBe(200);
    const revoked = await call(base, `/api/share-links/${link.token}`, {
      method: 'DELETE',
      token: ALICE,
    });
    expect(revoked.status).toBe(204);
    expect((await visit('secret', { cookie })).status).toBe(401);
  });

  it("stops an expired link's cookie, and its cookie lives no longer than the link", async () => {
    const link = await createLink(base, ALICE, 'secret', { expires_in: '3s' });
    const res = await fetchApp(String((await unlock(link.token)).grant_url));
    const setCookie = String(res.headers['set-cookie']);
    expect(Number(/Max-Age=(\d+)/.exec(setCookie)?.[1])).toBeLessThanOrEqual(3);
    const cookie = setCookie.split(';')[0] ?? '';
    expect((await visit('secret', { cookie })).status).toBe(200);
    await expect
      .poll(async () => (await visit('secret', { cookie })).status, { timeout: 10_000 })
      .toBe(401);
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(String(link.expires_at)));
  });

  it('sends an open link through /share/{token}/open; a protected one to its password page', async () => {
    const open = await createLink(base, ALICE, 'secret');
    const page = await call(base, `/share/${open.token}`);
    expect(page.text).toContain(`href="/share/${open.token}/open"`);
    expect(page.text).not.toContain('<iframe');
    const hop = await call(base, `/share/${open.token}/open`);
    expect(hop.status).toBe(303);
    const cookie = await redeem(String(hop.headers.get('location')));
    expect((await visit('secret', { cookie })).status).toBe(200);

    const locked = await createLink(base, ALICE, 'secret', { password: 'pw' });
    const back = await call(base, `/share/${locked.token}/open`);
    expect(back.status).toBe(303);
    expect(back.headers.get('location')).toBe(`/share/${locked.token}`);
    const gone = await call(base, `/share/${'0'.repeat(64)}/open`);
    expect(gone.status).toBe(404);
    expect(gone.text).toContain('does not exist, has expired or was revoked');
  });

  it('opens to everyone once made public, and closes again; PATCH is owner or admin, audited', async () => {
    const patch = (token: string, json: unknown, app = 'secret') =>
      call(base, `/v1/apps/${app}`, { method: 'PATCH', token, json });
    expect((await patch(BOB, { access: 'public' })).status).toBe(404);
    expect((await patch(ALICE, { access: 'open' })).status).toBe(400);
    expect((await patch(ALICE, { access: 'public', ttl: 'soon' })).status).toBe(400);
    expect((await patch(ALICE, {})).status).toBe(400);
    expect((await visit('secret')).status).toBe(401);

    const opened = await patch(ALICE, { access: 'public' });
    expect(opened.status, opened.text).toBe(200);
    expect(opened.body).toMatchObject({ app_id: 'secret', access: 'public' });
    const anyone = await visit('secret', { authorization: `Bearer ${BOB}` });
    expect(anyone.status).toBe(200);
    // Public or not, a Slipway key never reaches the app; the app's own token does.
    expect(seen(anyone.body).authorization).toBeNull();
    const own = await visit('secret', { authorization: 'Bearer the-apps-own-token' });
    expect(seen(own.body).authorization).toBe('Bearer the-apps-own-token');
    const link = await createLink(base, ALICE, 'secret');
    const view = await unlock(link.token);
    expect(view).toMatchObject({ access: 'public', url: urls.secret });
    expect(view).not.toHaveProperty('grant_url');

    expect((await patch(ROOT, { access: 'private' })).body).toMatchObject({ access: 'private' });
    expect((await visit('secret')).status).toBe(401);
    expect((await patch(ALICE, { access: 'private' })).status).toBe(200);

    const audit = await call(base, '/v1/audit?action=update&app=secret', { token: ROOT });
    const { events } = audit.body as { events: { actor: string; outcome: string }[] };
    // Bad bodies are refused before anything is attempted: nothing to audit.
    expect(events.map((e) => `${e.actor} ${e.outcome}`)).toEqual([
      'apikey-alice noop',
      'apikey-root ok',
      'apikey-alice ok',
      'apikey-bob denied',
    ]);
  });

  it('keeps access across a redeploy that names none, changes it on one that does', async () => {
    const kept = await deployEcho('other');
    expect(kept.access).toBe('private');
    expect((await visit('other')).status).toBe(401);
    const opened = await deployEcho('other', { access: 'public' });
    expect(opened.access).toBe('public');
    expect((await visit('other')).status).toBe(200);
    const bad = await deploy(base, ALICE, { name: 'other', access: 'friends' }, Buffer.from('x'));
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'bad_metadata', details: { field: 'access' } });
  });

  it('voids a grant when its app is deleted, even for a new app of the same name', async () => {
    await deployEcho('doomed', { access: 'private' });
    const link = await createLink(base, ALICE, 'doomed');
    const cookie = await redeem(String((await unlock(link.token)).grant_url));
    expect((await visit('doomed', { cookie })).status).toBe(200);
    expect((await call(base, '/v1/apps/doomed', { method: 'DELETE', token: ALICE })).status).toBe(
      204,
    );
    await deployEcho('doomed', { access: 'private' });
    expect((await visit('doomed', { cookie })).status).toBe(401);
    expect((await visit('doomed', { authorization: `Bearer ${ALICE}` })).status).toBe(200);
  });
});

describe('private apps on a server without share links (memory store), private by default', () => {
  let server: TestServer;
  let appUrl: string;
  beforeAll(async () => {
    server = await startTestServer({
      auth: { apiKeys: keys },
      store: { backend: 'memory' },
      apps: { defaultAccess: 'private' },
      runtime: { poolSize: 1 },
    });
    const source = await tarGz({ 'index.html': '<p>kept in</p>' });
    const res = await deploy(server.baseURL, ALICE, { name: 'quiet' }, source);
    expect([200, 202], JSON.stringify(res.body)).toContain(res.status);
    const app = await waitForPhase(server.baseURL, ALICE, 'quiet', ['Ready']);
    expect(app.access).toBe('private');
    appUrl = String(app.url);
  }, 120_000);
  afterAll(() => server?.stop());

  it('opens to the owner only, and says why nobody else can get in', async () => {
    const owner = await fetchApp(appUrl, { headers: { authorization: `Bearer ${ALICE}` } });
    expect(owner.status).toBe(200);
    expect(owner.body).toContain('kept in');
    const stranger = await fetchApp(appUrl);
    expect(stranger.status).toBe(401);
    const { message } = JSON.parse(stranger.body) as { message: string };
    expect(message).toContain('keeps no share links (store.backend: memory)');
    const link = await call(server.baseURL, '/v1/apps/quiet/share-links', {
      method: 'POST',
      token: ALICE,
    });
    expect(link).toMatchObject({ status: 503, body: { code: 'share_links_unavailable' } });
  });
});
