import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, withTab } from '../support/chromium.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { createLink, deployStatic } from '../support/share.js';

const ALICE = 'alice-page-key-0123456789';
const MARKER = 'the shared page body';

describe('the public share page /share/{token}', () => {
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
    appUrl = String((await deployStatic(base, ALICE, 'page-app', MARKER)).url);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('shows an open link at once: name, status, app link and frame, locked-down headers', async () => {
    const link = await createLink(base, ALICE, 'page-app');
    const page = await call(base, new URL(link.url).pathname);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.text).toContain('<h1>page-app</h1>');
    expect(page.text).toContain(`href="${appUrl}/"`);
    expect(page.text).toContain(`<iframe id="app-frame" src="${appUrl}/"`);
    expect(page.text).not.toContain('<script');
  });

  it('asks for the password of a protected link, naming the app and revealing nothing else', async () => {
    const link = await createLink(base, ALICE, 'page-app', { password: 'letmein' });
    const page = await call(base, `/share/${link.token}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<form id="unlock" class="panel">');
    expect(page.text).toContain('type="password"');
    expect(page.text).toContain('<title>page-app</title>');
    expect(page.text).toContain('<h1>page-app</h1>');
    // Not its URL, status or frame: those come only with the password.
    expect(page.text).not.toContain('page-app.');
    expect(page.text).not.toContain('<iframe');
    const nonce = /<script nonce="([^"]+)">/.exec(page.text)?.[1];
    expect(nonce).toBeTruthy();
    expect(page.headers.get('content-security-policy')).toContain(`'nonce-${nonce}'`);
  });

  it('answers revoked, unknown and hostile tokens with a 404 page that echoes nothing', async () => {
    const link = await createLink(base, ALICE, 'page-app');
    await call(base, `/api/share-links/${link.token}`, { method: 'DELETE', token: ALICE });
    const hostile = encodeURIComponent('<script>alert(1)</script>');
    for (const path of [`/share/${link.token}`, `/share/${'0'.repeat(64)}`, `/share/${hostile}`]) {
      const page = await call(base, path);
      expect(page.status, path).toBe(404);
      expect(page.headers.get('content-type'), path).toMatch(/^text\/html/);
      expect(page.text, path).toContain('does not exist, has expired or was revoked');
      expect(page.text, path).not.toContain('alert(1)');
    }
  });

  it('unlocks in a browser: wrong password is refused, the right one shows the app', async () => {
    const link = await createLink(base, ALICE, 'page-app', { password: 'letmein' });
    await withTab(browser, async (tab, errors) => {
      await tab.goto(link.url);
      await tab.fill('#password', 'nope');
      await tab.click('button[type=submit]');
      await tab.waitForFunction(
        () => document.getElementById('message')?.textContent === 'Wrong password.',
      );
      await tab.fill('#password', 'letmein');
      await tab.click('button[type=submit]');
      await tab.waitForSelector('iframe');
      expect(await tab.textContent('h1')).toBe('page-app');
      expect(await tab.getAttribute('a', 'href')).toBe(`${appUrl}/`);
      const frame = tab.frameLocator('iframe');
      await expect.poll(() => frame.locator('p').textContent(), { timeout: 15_000 }).toBe(MARKER);
      // The only console error allowed is the 401 of the wrong guess.
      expect(errors.filter((e) => !e.includes('401'))).toEqual([]);
    });
  });

  it('shows an open link in a browser with the app framed', async () => {
    const link = await createLink(base, ALICE, 'page-app');
    await withTab(browser, async (tab) => {
      await tab.goto(link.url);
      const frame = tab.frameLocator('#app-frame');
      await expect.poll(() => frame.locator('p').textContent(), { timeout: 15_000 }).toBe(MARKER);
    });
  });
});
