/**
 * An app's access in the dashboard, in headless Chromium against the real server: made private and
 * public again from the app page (checked by plain requests to the app's URL), the marker in the
 * list, what the share-link section says, and a private deploy from the form; axe-core on the
 * changed pages; screenshots light and dark in docs/screenshots/.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchApp } from '../support/deploy.js';
import { call } from '../support/server.js';
import { deployStatic } from '../support/share.js';
import { tarGz } from '../support/tarball.js';
import { appRow, expectAccessible, screenshot, type Tab } from './browser.js';
import { ALICE, LIVE, startDashboard, type Dashboard } from './session.js';

// An admin whose key may only read: it sees every app, and the server refuses its changes.
const AUDITOR = 'auditor-dashboard-key-012345678';

const accessOf = async (base: string, id: string) =>
  ((await call(base, `/v1/apps/${id}`, { token: ALICE })).body as { access: string }).access;
const badge = (page: Page) => page.getByTestId('access').locator('.badge');

describe('the dashboard: private and public apps', { timeout: 180_000 }, () => {
  let dashboard: Dashboard;
  let base: string;
  let alice: Tab;
  let siteUrl: string;

  beforeAll(async () => {
    dashboard = await startDashboard([
      { key: AUDITOR, name: 'auditor', role: 'admin', scopes: ['read'] },
    ]);
    base = dashboard.base;
    siteUrl = String((await deployStatic(base, ALICE, 'site')).url);
    alice = await dashboard.signIn(ALICE);
  });
  afterAll(() => dashboard?.close());

  it('makes an app private from its page: its URL answers 401, the list marks it', async () => {
    const { page } = alice;
    await page.goto(`${base}/#/apps/site`);
    await expect.poll(() => badge(page).textContent()).toBe('Public');
    expect(await page.getByTestId('shares-protect').textContent()).toMatch(/^This app is public/);
    expect((await fetchApp(siteUrl)).status).toBe(200);

    await page.getByRole('button', { name: 'Make private' }).click();
    await expect.poll(() => badge(page).textContent()).toBe('Private');
    expect(await page.getByTestId('access').textContent()).toContain('anyone else gets 401');
    expect(await page.getByTestId('shares-protect').textContent()).toMatch(/^This app is private/);
    expect(await accessOf(base, 'site')).toBe('private');
    const refused = await fetchApp(siteUrl);
    expect(refused.status).toBe(401);
    expect(refused.body).not.toContain('hello from site');
    await expectAccessible(page, 'app (private)');
    await screenshot(page, 'app-private');

    await page.goto(`${base}/#/`);
    await expect.poll(() => appRow(page, 'site').locator('.badge.access-private').count()).toBe(1);
    expect(await appRow(page, 'site').locator('th').textContent()).toBe('site Private');
    await expectAccessible(page, 'apps (private marker)');
    await screenshot(page, 'apps-private');
  });

  it("shows the server's refusal like the page's other actions and changes nothing", async () => {
    const auditor = await dashboard.signIn(AUDITOR);
    const { page } = auditor;
    await page.goto(`${base}/#/apps/site`);
    await expect.poll(() => badge(page).textContent()).toBe('Private');
    await page.getByRole('button', { name: 'Make public' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Make public' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/"deploy" scope/);
    expect(await badge(page).textContent()).toBe('Private');
    expect(await accessOf(base, 'site')).toBe('private');
    expect((await fetchApp(siteUrl)).status).toBe(401);
    // The 403 is the one console error this tab may have: the page reporting the refusal.
    expect(auditor.problems.filter((p) => !p.includes('403'))).toEqual([]);
  });

  it('asks before making it public again; Escape keeps it private, confirming opens it', async () => {
    const { page } = alice;
    await page.goto(`${base}/#/apps/site`);
    await expect.poll(() => badge(page).textContent()).toBe('Private');
    await page.getByRole('button', { name: 'Make public' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain('Anyone with its URL can open it');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(await badge(page).textContent()).toBe('Private');
    expect(await accessOf(base, 'site')).toBe('private');
    expect((await fetchApp(siteUrl)).status).toBe(401);

    await page.getByRole('button', { name: 'Make public' }).click();
    await dialog.getByRole('button', { name: 'Make public' }).click();
    await expect.poll(() => badge(page).textContent()).toBe('Public');
    expect(await accessOf(base, 'site')).toBe('public');
    const served = await fetchApp(siteUrl);
    expect(served.status).toBe(200);
    expect(served.body).toContain('hello from site');

    await page.goto(`${base}/#/`);
    await appRow(page, 'site').waitFor();
    expect(await appRow(page, 'site').locator('.badge.access-private').count()).toBe(0);
    expect(alice.problems).toEqual([]);
  });

  it('deploys private from the form; a redeploy left on the server default keeps it private', async () => {
    const { page } = alice;
    const dir = mkdtempSync(join(tmpdir(), 'private-'));
    const archive = join(dir, 'hidden.tar.gz');
    writeFileSync(archive, await tarGz({ 'index.html': '<p>hidden page</p>' }));
    const deployFromForm = async (access: RegExp) => {
      await page.getByRole('navigation').getByRole('link', { name: 'Deploy' }).click();
      const fallback = page.getByRole('radio', { name: /^Server default/ });
      expect(await fallback.isChecked()).toBe(true);
      await page.getByTestId('archive-input').setInputFiles(archive);
      await page.getByRole('radio', { name: access }).check();
      await page.getByRole('button', { name: 'Deploy', exact: true }).click();
      await page.locator('.watch .badge', { hasText: 'Ready' }).waitFor(LIVE);
      return String(await page.locator('.watch a[target=_blank]').getAttribute('href'));
    };
    try {
      await page.getByRole('navigation').getByRole('link', { name: 'Deploy' }).click();
      await expectAccessible(page, 'deploy (access choice)');

      const url = await deployFromForm(/^Private/);
      expect(await accessOf(base, 'hidden')).toBe('private');
      expect((await fetchApp(url)).status).toBe(401);
      const owner = await fetchApp(url, { headers: { authorization: `Bearer ${ALICE}` } });
      expect(owner.status).toBe(200);
      expect(owner.body).toContain('hidden page');

      await deployFromForm(/^Server default/);
      const versions = (await call(base, '/v1/apps/hidden/versions', { token: ALICE })).body;
      expect((versions as { items: unknown[] }).items).toHaveLength(2);
      expect(await accessOf(base, 'hidden')).toBe('private');
      expect((await fetchApp(url)).status).toBe(401);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(alice.problems).toEqual([]);
  });
});
