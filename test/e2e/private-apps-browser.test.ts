import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, withTab } from '../support/chromium.js';
import { deploy, waitForPhase } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { createLink } from '../support/share.js';
import { tarGz } from '../support/tarball.js';

const ALICE = 'alice-private-page-key-0123456789';
const MARKER = 'the private page body';

describe('a private app in a browser', () => {
  let server: TestServer;
  let base: string;
  let appUrl: string;
  let browser: Browser;
  beforeAll(async () => {
    server = await startTestServer({
      auth: { apiKeys: [{ key: ALICE, name: 'alice' }] },
      runtime: { poolSize: 1 },
    });
    base = server.baseURL;
    // No favicon request: every console error in the browser tests is then one of ours.
    const page = `<!doctype html><link rel="icon" href="data:,"><p id="marker">${MARKER}</p>`;
    const source = await tarGz({ 'index.html': page });
    const res = await deploy(base, ALICE, { name: 'hush', access: 'private' }, source);
    expect([200, 202], JSON.stringify(res.body)).toContain(res.status);
    appUrl = String((await waitForPhase(base, ALICE, 'hush', ['Ready'])).url);
    // `*.localhost` resolves to loopback in Chromium itself: the app host is a real host name.
    expect(new URL(appUrl).hostname).toBe('hush.localhost');
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('shows a stranger the sign-in page, not the app', async () => {
    await withTab(browser, async (tab) => {
      const res = await tab.goto(appUrl);
      expect(res?.status()).toBe(401);
      expect(await tab.textContent('h1')).toBe('This app is private');
      expect(await tab.textContent('#message')).toContain('share link');
      expect(await tab.content()).not.toContain(MARKER);
    });
  });

  it('lets a visitor in with the password: the app on its own host, and again after a reload', async () => {
    const link = await createLink(base, ALICE, 'hush', { password: 'let me in' });
    await withTab(browser, async (tab, errors) => {
      await tab.goto(link.url);
      await tab.fill('#password', 'wrong');
      await tab.click('button[type=submit]');
      await tab.waitForFunction(
        () => document.getElementById('message')?.textContent === 'Wrong password.',
      );
      await tab.fill('#password', 'let me in');
      await tab.click('button[type=submit]');
      await tab.waitForURL(`${appUrl}/`);
      expect(await tab.textContent('#marker')).toBe(MARKER);
      // The code is gone from the address bar; the cookie keeps the visitor in.
      expect(tab.url()).toBe(`${appUrl}/`);
      const reloaded = await tab.reload();
      expect(reloaded?.status()).toBe(200);
      expect(await tab.textContent('#marker')).toBe(MARKER);
      const cookies = await tab.context().cookies();
      expect(cookies).toEqual([
        expect.objectContaining({
          name: 'slipway_access_hush',
          domain: 'hush.localhost',
          httpOnly: true,
          sameSite: 'Lax',
          secure: false,
        }),
      ]);
      expect(cookies[0]?.value).not.toContain(link.token);
      // The only console errors allowed: the 401 of the wrong guess.
      expect(errors.filter((e) => !e.includes('401'))).toEqual([]);

      // Revoked: the very next request is refused.
      const revoked = await call(base, `/api/share-links/${link.token}`, {
        method: 'DELETE',
        token: ALICE,
      });
      expect(revoked.status).toBe(204);
      const after = await tab.reload();
      expect(after?.status()).toBe(401);
      expect(await tab.textContent('h1')).toBe('This app is private');
    });
  });

  it('lets a visitor of an open link in with one click', async () => {
    const link = await createLink(base, ALICE, 'hush');
    await withTab(browser, async (tab) => {
      await tab.goto(link.url);
      expect(await tab.textContent('h1')).toBe('hush');
      expect(await tab.locator('iframe').count()).toBe(0);
      await tab.click('#app-link');
      await tab.waitForURL(`${appUrl}/`);
      expect(await tab.textContent('#marker')).toBe(MARKER);
    });
  });
});
