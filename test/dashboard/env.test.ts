/**
 * The env editor of the app page (issue 28), in headless Chromium against the real server: names
 * shown, values write-only, a new release on save (checked by requests to the app's URL), a
 * refusal shown; axe-core on the page; screenshots light and dark in docs/screenshots/.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, fetchApp } from '../support/deploy.js';
import { call } from '../support/server.js';
import { tarGz } from '../support/tarball.js';
import { expectAccessible, screenshot, type Tab } from './browser.js';
import { ALICE, LIVE, startDashboard, type Dashboard } from './session.js';

const FIRST = 'dash-first-9a7c3e1b';
const SECOND = 'dash-second-4f2d8b6a';

const envApp = () =>
  tarGz({
    'package.json': JSON.stringify({ name: 'env-app', main: 'server.js' }),
    'server.js': `require('node:http').createServer((q, s) => s.end(String(process.env.GREETING) + ' ' + String(process.env.OTHER))).listen(process.env.PORT);`,
  });

describe('the dashboard: the env editor', { timeout: 180_000 }, () => {
  let dashboard: Dashboard;
  let base: string;
  let alice: Tab;
  let url: string;

  beforeAll(async () => {
    dashboard = await startDashboard();
    base = dashboard.base;
    const made = await deploy(
      base,
      ALICE,
      {
        name: 'tuned',
        env: [
          { name: 'GREETING', value: FIRST },
          { name: 'OTHER', value: 'o' },
        ],
      },
      await envApp(),
    );
    expect(made.status).toBe(200);
    url = String(made.body.url);
    alice = await dashboard.signIn(ALICE);
  });
  afterAll(() => dashboard?.close());

  it('shows the names, sets a value and removes a variable as new releases', async () => {
    const { page } = alice;
    await page.goto(`${base}/#/apps/tuned`);
    const names = page.getByTestId('env-names');
    await expect.poll(() => names.textContent()).toContain('GREETING');
    expect(await names.textContent()).toContain('OTHER');
    const save = page.getByRole('button', { name: 'Save environment' });
    expect(await save.isDisabled()).toBe(true);

    const editor = page.getByRole('region', { name: 'Environment' });
    await editor.getByRole('button', { name: 'Add a variable' }).click();
    await editor.getByLabel('Name').fill('GREETING');
    await editor.getByLabel('Value').fill(SECOND);
    await expectAccessible(page, 'app (env editor)');
    await save.click();
    await expect
      .poll(() => page.getByTestId('env-saved').textContent(), LIVE)
      .toBe('Saved as version 2 (Ready).');
    expect((await fetchApp(url)).body).toBe(`${SECOND} o`);
    // Write-only: the value left the form with the save and is nowhere on the page.
    expect(await editor.getByLabel('Value').count()).toBe(0);
    expect(await page.content()).not.toContain(SECOND);
    expect(await page.content()).not.toContain(FIRST);

    await editor.getByRole('checkbox', { name: 'OTHER remove' }).check();
    await save.click();
    await expect
      .poll(() => page.getByTestId('env-saved').textContent(), LIVE)
      .toBe('Saved as version 3 (Ready).');
    await expect.poll(() => names.textContent()).not.toContain('OTHER');
    expect((await fetchApp(url)).body).toBe(`${SECOND} undefined`);
    const app = await call(base, '/v1/apps/tuned', { token: ALICE });
    expect(app.body).toMatchObject({ live_version: 3, env: [{ name: 'GREETING' }] });
    await expectAccessible(page, 'app (env saved)');
    await screenshot(page, 'app-env');
  });

  it("shows the server's refusal and releases nothing", async () => {
    const { page } = alice;
    await page.goto(`${base}/#/apps/tuned`);
    const editor = page.getByRole('region', { name: 'Environment' });
    await expect.poll(() => page.getByTestId('env-names').textContent()).toContain('GREETING');
    await editor.getByRole('button', { name: 'Add a variable' }).click();
    await editor.getByLabel('Name').fill('PORT');
    await editor.getByLabel('Value').fill('1');
    await page.getByRole('button', { name: 'Save environment' }).click();
    await expect
      .poll(() => editor.getByRole('alert').textContent())
      .toContain('PORT is set by Slipway');
    const app = await call(base, '/v1/apps/tuned', { token: ALICE });
    expect(app.body).toMatchObject({ live_version: 3 });
    expect(alice.problems.filter((p) => !p.includes('400'))).toEqual([]);
  });
});
