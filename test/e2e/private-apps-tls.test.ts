/**
 * Private apps under TLS: the access cookie a share link hands out is `Secure` and `__Host-`
 * prefixed (browsers then refuse it over plain HTTP, from another host, or with a Domain), and it
 * works over HTTPS on the app's host. Real server with autoTLS, real sandbox, real HTTPS.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployForm, httpsTo, type HttpsInit } from '../support/https-client.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';

const ALICE = 'alice-private-tls-key-0123456789';

describe('private apps under TLS', () => {
  let server: TestServer;
  let ca: string;

  const https = (url: string, init: HttpsInit = {}) => httpsTo(ca, url, init);
  const api = (method: string, path: string, json?: unknown) =>
    https(`${server.baseURL}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${ALICE}`,
        ...(json === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(json === undefined ? {} : { body: JSON.stringify(json) }),
    });

  beforeAll(async () => {
    server = await startTestServer({
      auth: { apiKeys: [{ key: ALICE, name: 'alice' }], tls: { autoTLS: true } },
      runtime: { poolSize: 1 },
    });
    ca = readFileSync(join(server.dataDir, 'tls', 'auto-cert.pem'), 'utf8');
  });

  afterAll(async () => {
    await server?.stop();
  });

  it('hands out a Secure, __Host- cookie that opens the app over HTTPS on its own host', async () => {
    expect(server.baseURL.startsWith('https://')).toBe(true);
    const source = await tarGz({ 'index.html': '<!doctype html><p>members only</p>' });
    const form = deployForm({ name: 'vault', access: 'private' }, source);
    const deployed = await https(`${server.baseURL}/v1/deploy`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${ALICE}`,
        'content-type': form.type,
      },
      body: form.body,
    });
    expect(deployed.status, deployed.body).toBe(200);
    const app = JSON.parse((await api('GET', '/v1/apps/vault')).body) as {
      url: string;
      access: string;
    };
    expect(app.access).toBe('private');
    expect(app.url.startsWith('https://vault.localhost:')).toBe(true);
    expect((await https(app.url)).status).toBe(401);

    const link = JSON.parse((await api('POST', '/v1/apps/vault/share-links', {})).body) as {
      token: string;
    };
    const view = JSON.parse((await https(`${server.baseURL}/api/share/${link.token}`)).body) as {
      grant_url: string;
    };
    expect(view.grant_url.startsWith('https://vault.localhost:')).toBe(true);
    const granted = await https(view.grant_url);
    expect(granted.status).toBe(303);
    const setCookie = String(granted.headers['set-cookie']);
    expect(setCookie).toMatch(/^__Host-slipway_access_vault=[A-Za-z0-9_.-]+;/);
    for (const attribute of ['Secure', 'HttpOnly', 'SameSite=Lax', 'Path=/']) {
      expect(setCookie).toContain(attribute);
    }
    expect(setCookie).not.toMatch(/domain=/i);

    const cookie = setCookie.split(';')[0] ?? '';
    const page = await https(app.url, { headers: { cookie } });
    expect(page.status).toBe(200);
    expect(page.body).toContain('members only');
    // The same value under the plain-HTTP name is no grant here.
    const plain = cookie.replace(/^__Host-/, '');
    expect((await https(app.url, { headers: { cookie: plain } })).status).toBe(401);
  });
});
