/**
 * Issue #25 item 10: a folder deployed from the dashboard uploaded what the CLI leaves out: a
 * git-ignored `.env` (`DB_PASSWORD=...`), then served publicly by a static site, and all of
 * `node_modules` (5.2 MB against 274 B from the CLI). The dashboard now applies the CLI's ignore
 * rules and shows what it left out; a static site serves no dotfile unless it asks.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVE_DOTFILES } from '../../src/agent/static-server.js';
import { expectAccessible } from '../dashboard/browser.js';
import { ALICE, LIVE, startDashboard, type Dashboard } from '../dashboard/session.js';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { tarGz } from '../support/tarball.js';

const PASSWORD = 'DB_PASSWORD=correct-horse-battery-staple';
const FOLDER: Record<string, string> = {
  'index.html': '<!doctype html><title>site</title><p>public page</p>',
  '.gitignore': '.env\n',
  '.env': PASSWORD,
  '.htpasswd': 'admin:$apr1$not-for-visitors',
  '.well-known/security.txt': 'Contact: mailto:security@example.com',
  'node_modules/left-pad/index.js': `module.exports = ${JSON.stringify('x'.repeat(100_000))};`,
  'node_modules/left-pad/package.json': '{"name":"left-pad"}',
};

describe('a folder deployed from the dashboard', { timeout: 180_000 }, () => {
  let dashboard: Dashboard;
  let folder: string;
  beforeAll(async () => {
    dashboard = await startDashboard();
    folder = mkdtempSync(join(tmpdir(), 'dotfiles-site-'));
    for (const [path, text] of Object.entries(FOLDER)) {
      mkdirSync(dirname(join(folder, path)), { recursive: true });
      writeFileSync(join(folder, path), text);
    }
  });
  afterAll(async () => {
    await dashboard?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it('leaves out what the CLI leaves out, says so, and serves no dotfile', async () => {
    const { page, problems } = await dashboard.signIn(ALICE);
    await page.getByRole('link', { name: 'Deploy an app' }).click();
    await page.getByTestId('folder-input').setInputFiles(folder);
    // index.html, .gitignore, .htpasswd and .well-known/security.txt: what the CLI would send.
    await expect.poll(() => page.getByTestId('chosen').textContent()).toMatch(/: 4 files/);
    const leftOut = page.getByTestId('left-out');
    expect(await leftOut.locator('li').allTextContents()).toEqual([
      '.env',
      'node_modules/ (2 files)',
    ]);
    await expectAccessible(page, 'deploy with files left out');
    await page.getByLabel('App name').fill('dotfiles');
    await page.getByRole('button', { name: 'Deploy', exact: true }).click();
    await page.locator('.watch .badge', { hasText: 'Ready' }).waitFor(LIVE);
    const url = String(await page.locator('.watch a[target=_blank]').getAttribute('href'));

    expect((await fetchApp(`${url}/`)).body).toContain('public page');
    for (const path of ['/.env', '/node_modules/left-pad/index.js', '/.htpasswd', '/.gitignore']) {
      const res = await fetchApp(`${url}${path}`);
      expect(res.status, path).toBe(404);
      expect(res.body).not.toContain('DB_PASSWORD');
    }
    // Percent-encoded or dotted differently, still a dotfile.
    expect((await fetchApp(`${url}/%2Ehtpasswd`)).status).toBe(404);
    expect((await fetchApp(`${url}/./.htpasswd`)).status).toBe(404);
    const wellKnown = await fetchApp(`${url}/.well-known/security.txt`);
    expect(wellKnown.status).toBe(200);
    expect(wellKnown.body).toContain('Contact:');
    expect(problems).toEqual([]);
  });

  it(`serves dotfiles to a site that asks with a ${SERVE_DOTFILES} file`, async () => {
    const base = dashboard.base;
    const source = await tarGz({
      'index.html': '<p>asks</p>',
      [SERVE_DOTFILES]: '',
      '.htaccess': 'meant to be public here',
    });
    const res = await deploy(base, ALICE, { name: 'asks-dotfiles' }, source);
    expect([200, 202]).toContain(res.status);
    const app = await waitForPhase(base, ALICE, 'asks-dotfiles', ['Ready']);
    const served = await fetchApp(`${String(app.url)}/.htaccess`);
    expect(served.status).toBe(200);
    expect(served.body).toBe('meant to be public here');
  });
});
