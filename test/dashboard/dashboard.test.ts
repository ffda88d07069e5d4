/**
 * The dashboard end to end in headless Chromium against the real server (real port, SQLite,
 * bubblewrap sandboxes): sign-in, deploy by folder, isolation between users, live updates, logs,
 * share links, rollback, suspend and the admin pages; axe-core on every page; screenshots of each
 * page in light and dark into docs/screenshots/.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeApp } from '../support/apps.js';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';
import {
  appRow,
  expectAccessible,
  launchChromium,
  openTab,
  screenshot,
  signInWithKey,
  type Tab,
} from './browser.js';

const ALICE = 'alice-dashboard-key-0123456789';
const BOB = 'bob-dashboard-key-0123456789ab';
const OPS = 'ops-dashboard-key-0123456789ab';
const READER = 'reader-dashboard-key-012345678';
const STATIC_EXAMPLE = join(import.meta.dirname, '..', '..', 'examples', 'static');
// Sandboxes start on a shared two-core machine: generous bounds, never a speed assertion.
const LIVE = { timeout: 60_000 };

describe('the dashboard in Chromium', { timeout: 180_000 }, () => {
  let server: TestServer;
  let base: string;
  let browser: Browser;
  let alice: Tab;
  let bob: Tab;
  const tabs: Tab[] = [];
  const open = async () => {
    const tab = await openTab(browser);
    tabs.push(tab);
    return tab;
  };

  beforeAll(async () => {
    server = await startTestServer({
      auth: {
        apiKeys: [
          { key: ALICE, name: 'alice' },
          { key: BOB, name: 'bob' },
          { key: OPS, name: 'ops', role: 'admin' },
          { key: READER, name: 'reader', scopes: ['read'] },
        ],
      },
      runtime: { poolSize: 1 },
    });
    base = server.baseURL;
    browser = await launchChromium();
    alice = await open();
    bob = await open();
  });
  afterAll(async () => {
    for (const tab of tabs) await tab.context.close();
    await browser?.close();
    await server?.stop();
  });

  it('refuses a wrong key, signs in with a right one, shows how to deploy, signs out', async () => {
    const { page } = bob;
    await page.goto(`${base}/`);
    await page.getByLabel('API key').waitFor();
    await expectAccessible(page, 'sign-in');
    await screenshot(page, 'sign-in');

    await page.getByLabel('API key').fill('not-a-key-of-this-server');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/invalid|bearer/i);

    await signInWithKey(page, base, BOB);
    await page.getByRole('heading', { name: 'No apps yet' }).waitFor();
    expect(await page.locator('.empty pre').first().textContent()).toContain(`${base}/v1/deploy`);
    expect(await page.textContent('.empty')).toContain(`${base}/mcp`);
    await expectAccessible(page, 'apps (empty)');
    await screenshot(page, 'apps-empty');
    // Kept for the tab only: a new tab of the same context must sign in again.
    expect(await page.evaluate(() => localStorage.getItem('slipway.token'))).toBeNull();

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('slipway.token'))).toBeNull();
    // By keyboard alone: Tab to the key, type it, Enter.
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('api-key');
    await page.keyboard.type(BOB);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Apps' }).waitFor();
    // The 401 of the wrong key is the one console error this tab may have.
    expect(bob.problems.filter((p) => !p.includes('401'))).toEqual([]);
  });

  it('remembers the key on this device only when asked, and forgets it on sign-out', async () => {
    const device = await open();
    await device.page.goto(`${base}/`);
    await device.page.getByLabel('API key').fill(BOB);
    await device.page.getByLabel('Remember on this device').check();
    await device.page.getByRole('button', { name: 'Sign in' }).click();
    await device.page.getByRole('heading', { level: 1, name: 'Apps' }).waitFor();
    const second = await device.context.newPage();
    await second.goto(`${base}/`);
    await second.getByRole('heading', { level: 1, name: 'Apps' }).waitFor();
    await second.getByRole('button', { name: 'Sign out' }).click();
    await second.getByLabel('API key').waitFor();
    expect(await second.evaluate(() => localStorage.getItem('slipway.token'))).toBeNull();
    const third = await device.context.newPage();
    await third.goto(`${base}/`);
    await third.getByLabel('API key').waitFor();
  });

  it('deploys examples/static from a chosen folder, packed in the browser, and sees it Ready', async () => {
    const { page } = alice;
    await signInWithKey(page, base, ALICE);
    await page.getByRole('link', { name: 'Deploy an app' }).click();
    await page.getByRole('heading', { name: 'Deploy an app' }).waitFor();
    await expectAccessible(page, 'deploy');
    await screenshot(page, 'deploy');

    await page.getByTestId('folder-input').setInputFiles(STATIC_EXAMPLE);
    await expect
      .poll(() => page.getByTestId('chosen').textContent())
      .toMatch(/Folder static: 3 files/);
    expect(await page.getByLabel('App name').inputValue()).toBe('static');
    await page.getByLabel('App name').fill('site');
    await page.getByRole('button', { name: 'Add a variable' }).click();
    await page.getByLabel('Name', { exact: true }).fill('GREETING');
    await page.getByLabel('Value', { exact: true }).fill('hi');
    await page.getByRole('button', { name: 'Deploy', exact: true }).click();

    await page.getByRole('heading', { name: 'Deploying site' }).waitFor();
    await page.locator('.watch .badge', { hasText: 'Ready' }).waitFor(LIVE);
    const href = await page.locator('.watch a[target=_blank]').getAttribute('href');
    expect(href).toMatch(/^http:\/\/site\.localhost:\d+/);
    const served = await fetchApp(String(href));
    expect(served.body).toContain('Hello from a static Slipway app');
    await screenshot(page, 'deploy-ready');

    const app = (await call(base, '/v1/apps/site', { token: ALICE })).body as { env: unknown };
    expect(app.env).toEqual([{ name: 'GREETING' }]);
    expect(alice.problems).toEqual([]);
  });

  it("shows a failed deploy with its reason and the app's last log lines", async () => {
    const { page } = alice;
    const folder = mkdtempSync(join(tmpdir(), 'crasher-'));
    writeFileSync(
      join(folder, 'package.json'),
      JSON.stringify({ name: 'crasher', main: 'server.js' }),
    );
    writeFileSync(join(folder, 'server.js'), "console.log('about to fail'); process.exit(3);\n");
    try {
      // The Deploy link of the page already shown starts a fresh form.
      await page.getByRole('navigation').getByRole('link', { name: 'Deploy' }).click();
      await page.getByTestId('folder-input').setInputFiles(folder);
      await page.getByLabel('App name').fill('crasher');
      await page.getByRole('button', { name: 'Deploy', exact: true }).click();
      await page.locator('.watch .badge', { hasText: 'Failed' }).waitFor(LIVE);
      const watch = page.locator('.watch');
      await expect
        .poll(() => watch.locator('pre.log').textContent(), LIVE)
        .toContain('about to fail');
      expect(await watch.textContent()).toMatch(/Reason: \S+/);
      await expectAccessible(page, 'deploy (failed)');
      await screenshot(page, 'deploy-failed');
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
    await page.goto(`${base}/#/`);
    await call(base, '/v1/apps/crasher', { method: 'DELETE', token: ALICE });
    await appRow(page, 'crasher').waitFor({ state: 'detached' });
    // The failed deploy answers 500 deploy_failed: that console line is the page reporting it.
    alice.problems.splice(0);
  });

  it('deploys a chosen .tar.gz with an upload progress bar', async () => {
    const { page } = alice;
    const dir = mkdtempSync(join(tmpdir(), 'archive-'));
    const archive = join(dir, 'packed-site.tar.gz');
    writeFileSync(archive, await tarGz({ 'index.html': '<p>from an archive</p>' }));
    try {
      await page.getByRole('navigation').getByRole('link', { name: 'Deploy' }).click();
      await page.getByTestId('archive-input').setInputFiles(archive);
      expect(await page.getByLabel('App name').inputValue()).toBe('packed-site');
      // Recorded from the DOM itself: the bar may come and go faster than a poll could see it.
      await page.evaluate(() => {
        const seen = window as unknown as { sawProgress?: boolean };
        new MutationObserver(() => {
          if (document.querySelector('progress')) seen.sawProgress = true;
        }).observe(document.body, { childList: true, subtree: true });
      });
      await page.getByRole('button', { name: 'Deploy', exact: true }).click();
      await page.locator('.watch .badge', { hasText: 'Ready' }).waitFor(LIVE);
      const seen = await page.evaluate(() => (window as { sawProgress?: boolean }).sawProgress);
      expect(seen).toBe(true);
      const href = await page.locator('.watch a[target=_blank]').getAttribute('href');
      expect((await fetchApp(String(href))).body).toContain('from an archive');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    await page.goto(`${base}/#/`);
    await call(base, '/v1/apps/packed-site', { method: 'DELETE', token: ALICE });
    await appRow(page, 'packed-site').waitFor({ state: 'detached' });
  });

  it('takes a .tar.gz dropped on the drop zone and refuses anything else', async () => {
    const { page } = alice;
    await page.getByRole('navigation').getByRole('link', { name: 'Deploy' }).click();
    const drop = (name: string) =>
      page.locator('.dropzone').evaluate((zone, file) => {
        const data = new DataTransfer();
        data.items.add(new File(['not checked here'], file));
        zone.dispatchEvent(new DragEvent('dragover', { dataTransfer: data, bubbles: true }));
        zone.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true }));
      }, name);
    await drop('notes.txt');
    await expect
      .poll(() => page.locator('.dropzone [role=alert]').textContent())
      .toBe('Drop a folder or a .tar.gz file.');
    await drop('dropped-app.tgz');
    await expect
      .poll(() => page.getByTestId('chosen').textContent())
      .toMatch(/^Archive dropped-app\.tgz/);
    expect(await page.getByLabel('App name').inputValue()).toBe('dropped-app');
    expect(await page.locator('.dropzone [role=alert]').count()).toBe(0);
  });

  it('a second browser context signed in as another user does not see it', async () => {
    const { page } = bob;
    await page.goto(`${base}/#/`);
    await page.getByRole('heading', { name: 'No apps yet' }).waitFor();
    expect(await appRow(page, 'site').count()).toBe(0);
    await page.goto(`${base}/#/apps/site`);
    await page.getByText('There is no app site that you can see').waitFor();
  });

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

    const visitor = await open();
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

  it('admin: every app with an owner filter; the audit trail filtered by action and app', async () => {
    const ops = await open();
    const { page } = ops;
    await signInWithKey(page, base, OPS);
    await appRow(page, 'site').waitFor();
    await page.getByLabel('Owner').selectOption('apikey-alice');
    expect(await page.locator('tbody tr').count()).toBe(2);
    await page.getByLabel('Search').fill('log');
    expect(await page.locator('tbody tr').count()).toBe(1);

    await page.getByRole('link', { name: 'Audit' }).click();
    await page.getByRole('heading', { name: 'Audit trail' }).waitFor();
    const rows = page.locator('table.audit tbody tr');
    await expect.poll(() => rows.count()).toBeGreaterThanOrEqual(4);
    await page.getByLabel('Action').selectOption('suspend');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => rows.count()).toBe(1);
    expect(await rows.first().textContent()).toContain('apikey-alice');
    expect(await rows.first().textContent()).toContain('logger');

    await page.getByLabel('Action').selectOption('');
    await page.getByLabel('App').fill('site');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => rows.allTextContents()).toEqual([expect.stringContaining('site')]);
    expect(await rows.first().textContent()).toContain('deploy');
    await page.getByLabel('App').fill('');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => rows.count()).toBeGreaterThanOrEqual(4);
    await expectAccessible(page, 'audit');
    await screenshot(page, 'audit');
    expect(ops.problems).toEqual([]);
  });

  it('admin: the audit trail pages through more events than one page holds', async () => {
    const ops = tabs[tabs.length - 1] as Tab;
    const { page } = ops;
    // Refused deploys are audited too (outcome denied) and cost no sandbox: 55 of them.
    const source = await tarGz({ 'index.html': 'refused' });
    for (let i = 0; i < 55; i += 1) {
      const res = await deploy(base, READER, { name: `refused-${i}` }, source);
      expect(res.status).toBe(403);
    }
    await page.getByLabel('Actor').fill('apikey-reader');
    await page.getByRole('button', { name: 'Filter' }).click();
    const rows = page.locator('table.audit tbody tr');
    await page.getByText('Page 1 of 2 (55 events)').waitFor();
    expect(await rows.count()).toBe(50);
    expect(await rows.first().textContent()).toContain('refused-54');
    await page.getByRole('button', { name: 'Older' }).click();
    await page.getByText('Page 2 of 2 (55 events)').waitFor();
    expect(await rows.count()).toBe(5);
    expect(await rows.last().textContent()).toContain('refused-0');
    expect(await rows.last().textContent()).toContain('denied');
    expect(await page.getByRole('button', { name: 'Older' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Newer' }).click();
    await page.getByText('Page 1 of 2 (55 events)').waitFor();
  });

  it('admin: departments, and a user created with its key shown once, then suspended', async () => {
    const ops = tabs[tabs.length - 1] as Tab;
    const { page } = ops;
    await page.goto(`${base}/#/admin/departments`);
    await page.getByLabel('Id').fill('platform');
    await page.getByLabel('Name').fill('Platform team');
    await page.getByRole('button', { name: 'Create department' }).click();
    await page.getByText('Platform team').waitFor();
    await expectAccessible(page, 'departments');
    await screenshot(page, 'departments');

    await page.goto(`${base}/#/admin/users`);
    await page.getByLabel('Name').fill('carol');
    await page.getByRole('button', { name: 'Create user' }).click();
    const key = String(await page.getByTestId('new-key').textContent());
    expect(key.length).toBeGreaterThan(20);
    const carolRow = page.locator('tr[data-user="apikey-carol"]');
    await carolRow.waitFor();
    await carolRow.getByLabel('Department of apikey-carol').selectOption('platform');
    await expect
      .poll(async () => userOf(base, 'apikey-carol'))
      .toMatchObject({ department: 'platform' });
    await expectAccessible(page, 'users');
    // The key of a throwaway server, yet a key: the picture shows where it appears, not what it is.
    await screenshot(page, 'users', [page.getByTestId('new-key')]);
    await page.getByRole('button', { name: 'I have stored it' }).click();
    expect(await page.getByTestId('new-key').count()).toBe(0);

    const carol = await open();
    await signInWithKey(carol.page, base, key);
    await carolRow.getByRole('button', { name: 'Suspend' }).click();
    await expect
      .poll(async () => userOf(base, 'apikey-carol'))
      .toMatchObject({ status: 'suspended' });
    await carolRow.getByRole('button', { name: 'Reactivate' }).waitFor();
  });
});

async function userOf(base: string, id: string): Promise<Record<string, unknown>> {
  return (await call(base, `/api/users/${id}`, { token: OPS })).body as Record<string, unknown>;
}
