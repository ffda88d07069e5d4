/**
 * The dashboard end to end in headless Chromium against the real server (real port, SQLite,
 * bubblewrap sandboxes): sign-in, deploy from the browser (folder, archive, drop, failure) and
 * isolation between users; axe-core on every page; screenshots light and dark in docs/screenshots/.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchApp } from '../support/deploy.js';
import { call } from '../support/server.js';
import { tarGz } from '../support/tarball.js';
import { appRow, expectAccessible, screenshot, signInWithKey, type Tab } from './browser.js';
import { ALICE, BOB, LIVE, startDashboard, type Dashboard } from './session.js';

const STATIC_EXAMPLE = join(import.meta.dirname, '..', '..', 'examples', 'static');

describe('the dashboard: sign-in and deploy', { timeout: 180_000 }, () => {
  let dashboard: Dashboard;
  let base: string;
  let alice: Tab;
  let bob: Tab;

  beforeAll(async () => {
    dashboard = await startDashboard();
    base = dashboard.base;
    alice = await dashboard.open();
    bob = await dashboard.open();
  });
  afterAll(() => dashboard?.close());

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
    const device = await dashboard.open();
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
});
