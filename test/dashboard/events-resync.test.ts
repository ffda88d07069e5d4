/**
 * The apps list and the event stream that keeps it current (issue 30: a dashboard test saw a
 * deleted app's row stay for 30 s on a busy host): an event sent while the tab had no stream open
 * (before its first connection, or while it reconnects) is lost to it, so the list is read again
 * each time the stream opens. And an app's delete event can reach the tab before its list is shown:
 * the list read then must not bring the app back (the server's views leave out an app being
 * deleted). Headless Chromium against the real server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stubbornApp } from '../support/apps.js';
import { deploy } from '../support/deploy.js';
import { call } from '../support/server.js';
import { SseClient } from '../support/sse.js';
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

    it('does not bring back an app whose delete event came before the list was shown', async () => {
      const { base } = dashboard;
      for (const [name, source] of [
        ['going-slowly', stubbornApp()],
        ['staying', tarGz({ 'index.html': '<p>stays</p>' })],
      ] as const) {
        const made = await deploy(base, ALICE, { name }, await source);
        expect(made.status, JSON.stringify(made.body)).toBe(200);
      }
      const { page } = await dashboard.signIn(ALICE);
      await appRow(page, 'going-slowly').waitFor(LIVE);
      // Away from the list: the delete's event reaches the tab while no list is there to hear it.
      await page.getByRole('navigation').getByRole('link', { name: 'Deploy' }).click();
      await page.getByRole('heading', { name: 'Deploy an app' }).waitFor();
      const events = await SseClient.open(`${base}/api/events`, ALICE);
      try {
        const deleting = call(base, '/v1/apps/going-slowly', { method: 'DELETE', token: ALICE });
        await events.waitFor(
          (f) => f.event === 'app' && JSON.parse(f.data ?? '{}').kind === 'delete',
          'the delete event',
        );
        // Back to the list while the app's sandbox still takes its SIGTERM grace to go.
        await page.getByRole('navigation').getByRole('link', { name: 'Apps' }).click();
        await appRow(page, 'staying').waitFor(LIVE);
        expect((await deleting).status).toBe(204);
        expect(await appRow(page, 'going-slowly').count()).toBe(0);
      } finally {
        events.close();
      }
    });
  },
);
