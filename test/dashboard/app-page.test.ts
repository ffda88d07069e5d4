/**
 * The dashboard's live views in headless Chromium against the real server: an app deployed by curl
 * appears without a reload, the log tail, share links, rollback and suspend; axe-core on every
 * page; screenshots light and dark in docs/screenshots/.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeApp } from '../support/apps.js';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { call } from '../support/server.js';
import { deployStatic } from '../support/share.js';
import { appRow, expectAccessible, screenshot, type Tab } from './browser.js';
import { ALICE, LIVE, startDashboard, type Dashboard } from './session.js';

describe('the dashboard: live list and the app page', { timeout: 180_000 }, () => {
  let dashboard: Dashboard;
  let base: string;
  let alice: Tab;

  beforeAll(async () => {
    dashboard = await startDashboard();
    base = dashboard.base;
    await deployStatic(base, ALICE, 'site');
    alice = await dashboard.signIn(ALICE);
  });
  afterAll(() => dashboard?.close());

  it('shows an app deployed by curl in the list live, without a reload', async () => {
    const { page } = alice;
    await page.goto(`${base}/#/`);
    await appRow(page, 'site').waitFor();
    await page.evaluate(() => ((window as unknown as { stayed: boolean }).stayed = true));

    const metadata = {
      name: 'logger',
      env: [{ name: 'LOG_MODE', value: 'secret-value' }],
      egress: { allowed_hosts: ['api.example.com'] },
    };
    const res = await deploy(base, ALICE, metadata, await nodeApp('one'));
    expect([200, 202]).toContain(res.status);
    await appRow(page, 'logger').locator('.badge', { hasText: 'Ready' }).waitFor(LIVE);
    expect(await appRow(page, 'logger').textContent()).toContain('logger.localhost');
    expect(await page.evaluate(() => (window as unknown as { stayed?: boolean }).stayed)).toBe(
      true,
    );
    await expectAccessible(page, 'apps');
    await screenshot(page, 'apps');
    await page.setViewportSize({ width: 390, height: 844 });
    await expectAccessible(page, 'apps (phone)');
    await screenshot(page, 'apps-phone');
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('follows the log tail while the app prints; pause, follow again, version filter, clear', async () => {
    const { page } = alice;
    await page.goto(`${base}/#/apps/logger`);
    const log = page.getByTestId('log');
    await expect.poll(() => log.textContent(), LIVE).toContain('booted one');
    const facts = page.locator('dl.facts');
    expect(await facts.textContent()).toContain('LOG_MODE');
    expect(await facts.textContent()).toContain('api.example.com');
    expect(await page.locator('main').textContent()).not.toContain('secret-value');
    const url = String((await waitForPhase(base, ALICE, 'logger', ['Ready'], 60_000)).url);

    await fetchApp(`${url}/log?msg=tail-check&n=3`);
    await expect.poll(() => log.textContent(), LIVE).toContain('tail-check-3');

    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByText('paused', { exact: true }).waitFor();
    await fetchApp(`${url}/log?msg=while-paused`);
    await page.getByRole('button', { name: 'Follow' }).click();
    // Following again reloads the recent lines: what was printed meanwhile shows up.
    await expect.poll(() => log.textContent(), LIVE).toContain('while-paused');

    await page.getByRole('button', { name: 'Clear' }).click();
    await expect.poll(() => log.textContent()).toBe('No lines yet.');
    await fetchApp(`${url}/log?msg=after-clear`);
    await expect.poll(() => log.textContent(), LIVE).toContain('after-clear');
    expect(await log.textContent()).not.toContain('tail-check');

    await page.getByRole('combobox', { name: /^Version/ }).selectOption('1');
    await expect.poll(() => log.textContent(), LIVE).toContain('booted one');
  });

  it('creates a password share link and opens it', async () => {
    const { page } = alice;
    await page.goto(`${base}/#/apps/site`);
    await page.getByRole('heading', { name: 'Share links' }).waitFor();
    await page.getByLabel('Password (optional)').fill('open-sesame');
    await page.getByLabel('Expires in (optional)').fill('1h');
    await page.getByRole('button', { name: 'Create link' }).click();
    const item = page.locator('.links li').first();
    await expect.poll(() => item.textContent()).toContain('password');
    expect(await item.textContent()).toMatch(/expires/);
    const linkUrl = String(await item.locator('a').getAttribute('href'));
    expect(linkUrl).toMatch(/\/share\/[0-9a-f]+$/);

    await item.getByRole('button', { name: /Copy link/ }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(linkUrl);
    await expectAccessible(page, 'app (static)');

    const visitor = await dashboard.open();
    await visitor.page.goto(linkUrl);
    await visitor.page.fill('#password', 'open-sesame');
    await visitor.page.click('button[type=submit]');
    await visitor.page.waitForSelector('iframe');
    expect(await visitor.page.textContent('h1')).toBe('site');

    await item.getByRole('button', { name: 'Revoke' }).click();
    await expect.poll(() => page.locator('.links li').count()).toBe(0);
    expect((await call(base, new URL(linkUrl).pathname)).status).toBe(404);
  });

  it('rolls back and sees the serving marker move', async () => {
    const { page } = alice;
    const res = await deploy(base, ALICE, { name: 'logger' }, await nodeApp('two'));
    expect([200, 202]).toContain(res.status);
    await waitForPhase(base, ALICE, 'logger', ['Ready'], 60_000);
    await page.goto(`${base}/#/apps/logger`);
    const serving = page.locator('tr.serving');
    await expect.poll(() => serving.getAttribute('data-version'), LIVE).toBe('2');

    await page.getByRole('button', { name: 'Roll back to version 1' }).click();
    await expect.poll(() => serving.getAttribute('data-version'), LIVE).toBe('3');
    expect(await serving.textContent()).toContain('rollback to v1');
    expect(await page.locator('tr[data-version="2"] .serving-mark').count()).toBe(0);
    await expectAccessible(page, 'app (node)');
    await screenshot(page, 'app');
  });

  it('suspends after a confirmation and sees the badge change, here and in the list', async () => {
    const { page } = alice;
    await page.getByRole('button', { name: 'Suspend' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    // Focus moves into the dialog; Escape cancels it.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(await page.locator('.title-row .badge').textContent()).toBe('Ready');

    await page.getByRole('button', { name: 'Suspend' }).click();
    await dialog.getByRole('button', { name: 'Suspend' }).click();
    await expect
      .poll(() => page.locator('.title-row .badge').textContent(), LIVE)
      .toBe('Suspended');
    await page.getByRole('button', { name: 'Resume' }).waitFor();

    await page.goto(`${base}/#/`);
    await appRow(page, 'logger').locator('.badge', { hasText: 'Suspended' }).waitFor(LIVE);
    expect(alice.problems).toEqual([]);
  });

  it('follows the URL when it changes the moment the pages appear after sign-in', async () => {
    const tab = await dashboard.open();
    const { page } = tab;
    await page.goto(`${base}/`);
    await page.getByLabel('API key').fill(ALICE);
    // The page's own effects run a frame after its render; the hash moves before that frame.
    await page.evaluate(() => {
      new MutationObserver((_, observer) => {
        if (document.querySelector('main h1')?.textContent !== 'Apps') return;
        observer.disconnect();
        location.hash = '#/apps/site';
      }).observe(document.body, { childList: true, subtree: true, characterData: true });
    });
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'site' }).waitFor();
    expect(await page.getByTestId('access').locator('.badge').textContent()).toBe('Public');
    expect(tab.problems).toEqual([]);
  });
});
