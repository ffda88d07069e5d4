/**
 * The dashboard's admin pages in headless Chromium against the real server: every owner's apps
 * with an owner filter, the audit trail (filters and paging), departments and users; axe-core on
 * every page; screenshots light and dark in docs/screenshots/.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy } from '../support/deploy.js';
import { call } from '../support/server.js';
import { deployStatic } from '../support/share.js';
import { tarGz } from '../support/tarball.js';
import { appRow, expectAccessible, screenshot, type Tab } from './browser.js';
import { ALICE, BOB, OPS, READER, startDashboard, type Dashboard } from './session.js';

describe('the dashboard: admin pages', { timeout: 180_000 }, () => {
  let dashboard: Dashboard;
  let base: string;
  let ops: Tab;

  beforeAll(async () => {
    dashboard = await startDashboard();
    base = dashboard.base;
    // Two apps of alice's (one suspended) and one of bob's: what the admin pages show.
    await deployStatic(base, ALICE, 'site');
    await deployStatic(base, ALICE, 'logger');
    await deployStatic(base, BOB, 'other');
    const suspended = await call(base, '/v1/apps/logger/suspend', { method: 'POST', token: ALICE });
    expect(suspended.status).toBe(200);
    ops = await dashboard.signIn(OPS);
  });
  afterAll(() => dashboard?.close());

  it('every app with an owner filter; the audit trail filtered by action and app', async () => {
    const { page } = ops;
    await appRow(page, 'other').waitFor();
    expect(await page.locator('tbody tr').count()).toBe(3);
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

  it('the audit trail pages through more events than one page holds', async () => {
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

  it('departments, and a user created with its key shown once, then suspended', async () => {
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

    await dashboard.signIn(key);
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
