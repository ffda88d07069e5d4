/**
 * The dashboard's way in for the modes without a sign-in page of its own: auth disabled (straight
 * in, as admin) and the trusted proxy (`oauth`: the proxy's header is the session).
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, withTab } from '../support/chromium.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { expectAccessible } from './browser.js';

describe('the dashboard without a sign-in page', () => {
  let browser: Browser;
  const servers: TestServer[] = [];
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    for (const server of servers) await server.stop();
  });

  it('goes straight in when auth is disabled, as admin, with no sign-out', async () => {
    const server = await startTestServer({ auth: { enabled: false } });
    servers.push(server);
    await withTab(browser, async (page) => {
      await page.goto(`${server.baseURL}/`);
      await page.getByRole('heading', { name: 'No apps yet' }).waitFor();
      expect(await page.locator('header .user').textContent()).toBe('admin (admin)');
      expect(await page.getByRole('link', { name: 'Audit' }).count()).toBe(1);
      expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
      expect(await page.getByLabel('API key').count()).toBe(0);
    });
  });

  it('takes the trusted proxy’s user as the session, and says so when the proxy sent none', async () => {
    const server = await startTestServer({ auth: { mode: 'oauth' } });
    servers.push(server);
    // Chromium on loopback stands in for the proxy: the header is what the gateway would add.
    const proxied = await browser.newContext({ extraHTTPHeaders: { 'x-forwarded-user': 'erin' } });
    const direct = await browser.newContext();
    try {
      const page = await proxied.newPage();
      await page.goto(`${server.baseURL}/`);
      await page.getByRole('heading', { name: 'No apps yet' }).waitFor();
      expect(await page.locator('header .user').textContent()).toBe('erin');
      expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
      expect(await page.getByRole('link', { name: 'Audit' }).count()).toBe(0);

      const bare = await direct.newPage();
      await bare.goto(`${server.baseURL}/`);
      await bare.getByText('This server trusts its proxy to sign you in').waitFor();
      expect(await bare.getByRole('alert').textContent()).toMatch(/did not send x-forwarded-user/);
      expect(await bare.getByLabel('API key').count()).toBe(0);
      await expectAccessible(bare, 'oauth sign-in');
    } finally {
      await proxied.close();
      await direct.close();
    }
  });
});
