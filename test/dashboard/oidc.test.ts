/**
 * The dashboard's OIDC sign-in in headless Chromium against a real oidc-provider: Authorization
 * Code with PKCE as a public client, the provider's own login and consent pages, and back to `/`
 * with the access token kept in the tab, never in a URL.
 */
import { createServer, type Server } from 'node:http';
import { exportJWK, generateKeyPair } from 'jose';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIENCE, freePort, makeDashboardProvider } from '../auth/oidc-fixture.js';
import { launchChromium } from '../support/chromium.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { expectAccessible, openTab, screenshot, type Tab } from './browser.js';

const CLIENT_ID = 'slipway-dashboard';

describe('the dashboard signs in with OIDC (code + PKCE) against oidc-provider', () => {
  let server: TestServer;
  let base: string;
  let issuer: string;
  let idp: Server;
  let browser: Browser;
  let tab: Tab;

  beforeAll(async () => {
    const port = await freePort();
    issuer = `http://127.0.0.1:${port}`;
    server = await startTestServer({
      auth: {
        mode: 'oidc',
        oidc: { issuer, audience: AUDIENCE, dashboardClientId: CLIENT_ID },
      },
    });
    base = server.baseURL;
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const jwk = {
      ...(await exportJWK(privateKey)),
      kid: 'dashboard-key',
      alg: 'RS256',
      use: 'sig',
    };
    idp = createServer(makeDashboardProvider(issuer, CLIENT_ID, `${base}/`, jwk).callback());
    await new Promise<void>((resolve) => idp.listen(port, '127.0.0.1', resolve));
    browser = await launchChromium();
    tab = await openTab(browser);
  });
  afterAll(async () => {
    await tab?.context.close();
    await browser?.close();
    await server?.stop();
    await new Promise<void>((resolve) => (idp ? idp.close(() => resolve()) : resolve()));
  });

  it('publishes the public client in /api/auth and lets the page reach the issuer only', async () => {
    const info = await call(base, '/api/auth');
    expect(info.body).toEqual({
      enabled: true,
      mode: 'oidc',
      loginUrl: '',
      oidc: {
        issuer,
        client_id: CLIENT_ID,
        scopes: ['openid', 'profile', 'email'],
        audience: AUDIENCE,
      },
    });
    const page = await call(base, '/');
    expect(page.headers.get('content-security-policy')).toContain(`connect-src 'self' ${issuer}`);
  });

  it('signs in through the provider and lands on the apps with an admin token', async () => {
    const { page } = tab;
    await page.goto(`${base}/#/admin/audit`);
    const button = page.getByRole('button', {
      name: `Sign in with 127.0.0.1:${new URL(issuer).port}`,
    });
    await button.waitFor();
    await expectAccessible(page, 'oidc sign-in');
    await screenshot(page, 'sign-in-oidc');

    const requested: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    const leaving = page.waitForURL((url) => url.origin === issuer);
    await button.click();
    await leaving;
    await page.fill('input[name=login]', 'dana');
    await page.fill('input[name=password]', 'anything');
    await page.click('button[type=submit]');
    await page.getByRole('button', { name: 'Continue' }).click();

    // Back where the sign-in started, with the code and state gone from the address bar.
    await page.getByRole('heading', { name: 'Audit trail' }).waitFor();
    expect(page.url()).toBe(`${base}/#/admin/audit`);
    expect(await page.locator('header .user').textContent()).toBe('dana (admin)');
    const token = await page.evaluate(() => sessionStorage.getItem('slipway.token'));
    expect(token?.split('.')).toHaveLength(3);
    expect(await page.evaluate(() => sessionStorage.getItem('slipway.oidc'))).toBeNull();
    const whoami = await call(base, '/api/whoami', { token: String(token) });
    expect(whoami.body).toMatchObject({ user_id: 'dana', role: 'admin', mode: 'oidc' });
    // The provider's own pages fetch things this sandbox cannot reach; the dashboard must not fail.
    expect(tab.problems.filter((p) => p.startsWith(base))).toEqual([]);

    // What went to the provider: PKCE S256, the resource; and no token in any URL requested.
    const authorize = new URL(String(requested.find((u) => u.startsWith(`${issuer}/auth?`))));
    expect(authorize.searchParams.get('client_id')).toBe(CLIENT_ID);
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${base}/`);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(authorize.searchParams.get('resource')).toBe(AUDIENCE);
    expect(requested.some((u) => u.includes(String(token)))).toBe(false);
    expect(requested.some((u) => u.startsWith(`${base}/?code=`))).toBe(true);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await button.waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('slipway.token'))).toBeNull();
  });

  it('refuses a callback it did not start (no pending sign-in in this tab)', async () => {
    const other = await openTab(browser);
    try {
      await other.page.goto(`${base}/?code=forged&state=forged`);
      // No sign-in is pending in this tab, so the code is not redeemed: the sign-in page shows.
      await other.page.getByRole('button', { name: /Sign in with/ }).waitFor();
      expect(await other.page.evaluate(() => sessionStorage.getItem('slipway.token'))).toBeNull();
    } finally {
      await other.context.close();
    }
  });
});
