/**
 * Issue 29 in headless Chromium against the real server (real port, SQLite, bubblewrap
 * sandboxes): the deploy view streams the build's lines while it runs; a failed deploy leads with
 * its error line, said once, then a tail that holds it; the app page fits a phone (390 and 320
 * px), redeploys, says who deployed each version and shows the owner its activity; the folder
 * picker speaks up about an empty folder; the share-link password page names the app. axe-core
 * on each; screenshots light and dark in docs/screenshots/.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchApp } from '../support/deploy.js';
import { call } from '../support/server.js';
import { createLink } from '../support/share.js';
import { expectAccessible, expectNoOverflow, screenshot, type Tab } from './browser.js';
import { ALICE, LIVE, OPS, startDashboard, type Dashboard } from './session.js';

const PHONES = [390, 320];
// A build that prints a line a second: the view must show the first ones long before Ready.
const BUILD = `
for (let i = 1; i <= 8; i++) {
  console.log('build-line-' + i);
  await new Promise((r) => setTimeout(r, 1000));
}
`;
const SERVER =
  "require('node:http').createServer((q, s) => s.end('built app')).listen(process.env.PORT);\n";
const CRASHER = "const config = require('./config.json');\nconsole.log(config);\n";

/** A temporary folder with these files; removed by the returned function. */
function folderOf(name: string, files: Record<string, string>): { path: string; drop: () => void } {
  const parent = mkdtempSync(join(tmpdir(), 'watch-'));
  const path = join(parent, name);
  mkdirSync(path);
  for (const [file, text] of Object.entries(files)) writeFileSync(join(path, file), text);
  return { path, drop: () => rmSync(parent, { recursive: true, force: true }) };
}

describe('the dashboard shows a deploy happen', { timeout: 240_000 }, () => {
  let dashboard: Dashboard;
  let base: string;
  let alice: Tab;

  beforeAll(async () => {
    dashboard = await startDashboard();
    base = dashboard.base;
    alice = await dashboard.signIn(ALICE);
  });
  afterAll(() => dashboard?.close());

  const openDeploy = async () => {
    const { page } = alice;
    await page.getByRole('navigation').getByRole('link', { name: 'Deploy' }).click();
    await page.getByRole('heading', { name: 'Deploy an app' }).waitFor();
  };

  it('streams the build lines while the deploy runs, then shows it live', async () => {
    const { page } = alice;
    const folder = folderOf('builder', {
      'package.json': JSON.stringify({
        name: 'builder',
        main: 'server.js',
        scripts: { build: 'node build.mjs' },
      }),
      'build.mjs': BUILD,
      'server.js': SERVER,
    });
    try {
      await openDeploy();
      await page.getByTestId('folder-input').setInputFiles(folder.path);
      await expect.poll(() => page.getByTestId('chosen').textContent()).toMatch(/: 3 files,/);
      // What the view said when the first build line came in, recorded by the page itself.
      await page.evaluate(() => {
        const seen = window as unknown as { badgeAtFirstLine?: string };
        new MutationObserver(() => {
          const log = document.querySelector('[data-testid=deploy-log]')?.textContent ?? '';
          if (seen.badgeAtFirstLine === undefined && log.includes('build-line-1')) {
            seen.badgeAtFirstLine = document.querySelector('.watch .badge')?.textContent ?? '';
          }
        }).observe(document.body, { childList: true, subtree: true, characterData: true });
      });
      await page.getByRole('button', { name: 'Deploy', exact: true }).click();
      const log = page.getByTestId('deploy-log');
      await expect.poll(() => log.textContent(), LIVE).toContain('build-line-2');
      await expectAccessible(page, 'deploy (building)');
      for (const width of PHONES) {
        await page.setViewportSize({ width, height: 800 });
        await expectNoOverflow(page, `deploy (building) at ${width} px`);
      }
      await page.setViewportSize({ width: 1280, height: 800 });
      await screenshot(page, 'deploy-building');

      await page.locator('.watch .badge', { hasText: 'Ready' }).waitFor({ timeout: 120_000 });
      const badge = await page.evaluate(
        () => (window as unknown as { badgeAtFirstLine?: string }).badgeAtFirstLine,
      );
      expect(badge).toBeDefined();
      expect(badge).not.toBe('Ready');
      expect(await log.textContent()).toContain('build-line-8');
      const href = await page.locator('.watch a[target=_blank]').getAttribute('href');
      expect((await fetchApp(String(href))).body).toBe('built app');
      expect(alice.problems).toEqual([]);
    } finally {
      folder.drop();
    }
  });

  it('leads a failed deploy with its error line, once, then a tail that holds it', async () => {
    const { page } = alice;
    const folder = folderOf('crasher', {
      'package.json': JSON.stringify({ name: 'crasher', main: 'server.js' }),
      'server.js': CRASHER,
    });
    try {
      await openDeploy();
      await page.getByTestId('folder-input').setInputFiles(folder.path);
      await page.getByRole('button', { name: 'Deploy', exact: true }).click();
      const watch = page.locator('.watch');
      const first = page.getByTestId('first-error');
      await expect
        .poll(() => first.textContent(), LIVE)
        .toMatch(/Cannot find module '\.\/config\.json'/);
      const tail = page.getByTestId('failure-tail');
      await expect
        .poll(() => tail.textContent(), LIVE)
        .toContain("Cannot find module './config.json'");
      // The stack is shown once: in the tail, not again in a paragraph of the reason.
      const text = String(await watch.textContent());
      expect(text.split('Require stack').length - 1).toBe(1);
      expect(await watch.textContent()).toMatch(/Reason: \S+/);
      await expectAccessible(page, 'deploy (failed)');
      for (const width of PHONES) {
        await page.setViewportSize({ width, height: 800 });
        await expectNoOverflow(page, `deploy (failed) at ${width} px`);
      }
      await page.setViewportSize({ width: 1280, height: 800 });
      await screenshot(page, 'deploy-failed-stack');
    } finally {
      folder.drop();
    }
    await call(base, '/v1/apps/crasher', { method: 'DELETE', token: ALICE });
    // The failed deploy answers 500 deploy_failed: that console line is the page reporting it.
    alice.problems.splice(0);
  });

  it('says so when a folder is empty, and counts one file as "1 file"', async () => {
    const { page } = alice;
    const empty = folderOf('nothing', {});
    const single = folderOf('single', { 'index.html': '<p>one</p>' });
    try {
      await openDeploy();
      await page.getByTestId('folder-input').setInputFiles(empty.path);
      await expect
        .poll(() => page.locator('.dropzone [role=alert]').textContent())
        .toMatch(/empty: choose the folder that holds your app/);
      expect(await page.getByTestId('chosen').count()).toBe(0);
      await page.getByTestId('folder-input').setInputFiles(single.path);
      await expect
        .poll(() => page.getByTestId('chosen').textContent())
        .toBe('Folder single: 1 file, packed in the browser');
      expect(await page.locator('.dropzone [role=alert]').count()).toBe(0);
    } finally {
      empty.drop();
      single.drop();
    }
  });

  it('fits the app page on a phone; redeploys; says who deployed; shows the owner the activity', async () => {
    const { page } = alice;
    await page.goto(`${base}/#/apps/builder`);
    await page.locator('tr[data-version="1"]').waitFor(LIVE);
    await page.getByRole('button', { name: 'Redeploy' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Redeploy' }).click();
    // The same source again: its built tree comes back, so no build runs this time.
    await expect
      .poll(() => page.getByTestId('deploy-log').textContent(), LIVE)
      .toContain('version 2 starting');
    await page.locator('section .watch .badge', { hasText: 'Ready' }).waitFor({ timeout: 120_000 });
    const serving = page.locator('tr.serving');
    await expect.poll(() => serving.getAttribute('data-version'), LIVE).toBe('2');
    expect(await serving.locator('td[data-label=By]').textContent()).toBe('apikey-alice');

    const activity = page.locator('section[aria-labelledby=activity-title] tbody tr');
    await expect.poll(() => activity.first().textContent(), LIVE).toContain('redeploy');
    expect(await activity.first().textContent()).toContain('from v1 to v1');
    expect(await activity.last().textContent()).toContain('made v1');

    // Again, with a new variable: a release of the serving source with it.
    await page.getByRole('button', { name: 'Redeploy' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('button', { name: 'Add a variable' }).click();
    await dialog.getByLabel('Name', { exact: true }).fill('REDEPLOYED');
    await dialog.getByLabel('Value', { exact: true }).fill('secret-redeploy-value');
    await dialog.getByRole('button', { name: 'Redeploy', exact: true }).click();
    await expect.poll(() => serving.getAttribute('data-version'), LIVE).toBe('3');
    await page.locator('section .watch .badge', { hasText: 'Ready' }).waitFor(LIVE);
    expect(await page.locator('dl.facts').textContent()).toContain('REDEPLOYED');
    await expect.poll(() => activity.first().textContent(), LIVE).toContain('settings release');
    expect(await page.locator('main').textContent()).not.toContain('secret-redeploy-value');

    await expectAccessible(page, 'app (redeployed)');
    await screenshot(page, 'app-redeployed');
    for (const width of PHONES) {
      await page.setViewportSize({ width, height: 844 });
      await expectNoOverflow(page, `app page at ${width} px`);
      await expectAccessible(page, `app page at ${width} px`);
      const rollback = page.getByRole('button', { name: 'Roll back to version 2' });
      const box = await rollback.boundingBox();
      expect(box && box.x + box.width).toBeLessThanOrEqual(width);
    }
    await screenshot(page, 'app-phone-320');
    await page.setViewportSize({ width: 1280, height: 800 });
    expect(alice.problems).toEqual([]);
  });

  it("fits the admin's pages on a phone too, the audit trail saying what each row did", async () => {
    const { page } = await dashboard.signIn(OPS);
    for (const [path, heading] of [
      ['#/admin/audit', 'Audit trail'],
      ['#/admin/users', 'Users'],
      ['#/admin/departments', 'Departments'],
      ['#/', 'Apps'],
    ] as const) {
      await page.goto(`${base}/${path}`);
      await page.getByRole('heading', { level: 1, name: heading }).waitFor();
      if (path === '#/admin/audit') {
        const rows = page.locator('table.audit tbody tr');
        await expect
          .poll(() => rows.allTextContents())
          .toContainEqual(expect.stringMatching(/redeploy.*from v1 to v1; made v2/));
      }
      for (const width of PHONES) {
        await page.setViewportSize({ width, height: 800 });
        await expectNoOverflow(page, `${path} at ${width} px`);
      }
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  });

  it('names the app on the share-link password page, styled as the dashboard', async () => {
    const link = await createLink(base, ALICE, 'builder', { password: 'open-sesame' });
    const visitor = await dashboard.open();
    await visitor.page.goto(link.url);
    expect(await visitor.page.textContent('h1')).toBe('builder');
    expect(await visitor.page.title()).toBe('builder');
    const button = visitor.page.getByRole('button', { name: 'Open' });
    const background = await button.evaluate((el) => getComputedStyle(el).backgroundColor);
    // The dashboard's accent, not the browser's grey button.
    expect(background).toBe('rgb(29, 78, 216)');
    await expectAccessible(visitor.page, 'share password page');
    for (const width of PHONES) {
      await visitor.page.setViewportSize({ width, height: 800 });
      await expectNoOverflow(visitor.page, `share password page at ${width} px`);
    }
    await screenshot(visitor.page, 'share-password');
  });
});
