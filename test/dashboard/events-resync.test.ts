/**
 * The apps list and the event stream that keeps it current (issue 30: a dashboard test saw a
 * deleted app's row stay for 30 s on a busy host): an event sent while the tab had no stream open
 * (before its first connection, or while it reconnects) is lost to it, so the list is read again
 * each time the stream opens. Headless Chromium against the real server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy } from '../support/deploy.js';
import { call } from '../support/server.js';
import { tarGz } from '../support/tarball.js';
import { appRow, signInWithKey } from './browser.js';
import { ALICE, LIVE, startDashboard, type Dashboard } from './session.js';

describe(
  'the dashboard: the apps list across a gap in the event stream',
  { timeout: 180_000 },
  () => {
    let dashboard: Dashboard;

    beforeAll(async () => {
      dashboard = await startDashboard();
    });
    afterAll(() => dashboard?.close());

    it('drops an app deleted before the stream opened, once it opens', async () => {
      const { base } = dashboard;
      const made = await deploy(
        base,
        ALICE,
        { name: 'gap-site' },
        await tarGz({ 'index.html': '<p>gap</p>' }),
      );
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      const { page } = await dashboard.open();
      // The tab's first /api/events request is held until the app is gone: the delete's event is
      // sent while the tab has no stream, as when a stream is down on a busy host.
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => (release = resolve));
      let streams = 0;
      await page.route('**/api/events', async (route) => {
        streams += 1;
        if (streams === 1) await held;
        await route.continue();
      });
      await signInWithKey(page, base, ALICE);
      await appRow(page, 'gap-site').waitFor(LIVE);
      expect(streams).toBe(1);
      const del = await call(base, '/v1/apps/gap-site', { method: 'DELETE', token: ALICE });
      expect([200, 202, 204], JSON.stringify(del.body)).toContain(del.status);
      release();
      await appRow(page, 'gap-site').waitFor({ state: 'detached', ...LIVE });
      // The stream is live again: a deploy made now shows up by its events alone.
      const again = await deploy(
        base,
        ALICE,
        { name: 'gap-site-2' },
        await tarGz({ 'index.html': '<p>2</p>' }),
      );
      expect(again.status).toBe(200);
      await appRow(page, 'gap-site-2').waitFor(LIVE);
      expect(streams).toBe(1);
    });
  },
);
