/**
 * An app's `delete` event goes out when its delete begins; its row stays until its sandboxes are
 * reaped. A client that reads the apps after the event (the dashboard opening its list just then)
 * must not see the app again, or it shows until the next reload: no later event will remove it.
 * Over real HTTP, with an app that ignores SIGTERM so its teardown takes the whole grace.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stubbornApp } from '../support/apps.js';
import { deploy } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { SseClient } from '../support/sse.js';
import { tarGz } from '../support/tarball.js';

const ALICE = 'alice-delete-views-key-0123456';

const stubborn = stubbornApp();
const site = tarGz({ 'index.html': '<p>a site</p>' });

interface Listed {
  items: { app_id: string }[];
  total: number;
}

describe('views of an app being deleted', () => {
  let server: TestServer;
  const get = (path: string) => call(server.baseURL, path, { token: ALICE });

  beforeAll(async () => {
    server = await startTestServer({
      auth: { apiKeys: [{ key: ALICE, name: 'alice' }] },
      runtime: { poolSize: 1 },
    });
  });
  afterAll(() => server.stop());

  it('neither lists nor finds it once its delete event is out', async () => {
    for (const name of ['a-site', 'b-stubborn', 'c-site']) {
      const source = await (name === 'b-stubborn' ? stubborn : site);
      const res = await deploy(server.baseURL, ALICE, { name }, source);
      expect(res.body).toMatchObject({ app_id: name, url: expect.any(String) });
    }
    const events = await SseClient.open(`${server.baseURL}/api/events`, ALICE);
    try {
      await events.waitFor((f) => f.comment === 'connected', 'the opening comment');
      const deleting = call(server.baseURL, '/v1/apps/b-stubborn', {
        method: 'DELETE',
        token: ALICE,
      });
      await events.waitFor(
        (f) => f.event === 'app' && JSON.parse(f.data ?? '{}').kind === 'delete',
        'the delete event',
      );
      let reaped = false;
      void deleting.then(() => (reaped = true));
      const [list, page, one] = await Promise.all([
        get('/v1/apps'),
        get('/v1/apps?limit=1&offset=1'),
        get('/v1/apps/b-stubborn'),
      ]);
      // Read while it was still being reaped: the app ignores SIGTERM, so that takes the grace.
      expect(reaped).toBe(false);
      const all = list.body as Listed;
      expect(all.items.map((a) => a.app_id)).toEqual(['a-site', 'c-site']);
      expect(all.total).toBe(2);
      const second = page.body as Listed;
      expect([second.items.map((a) => a.app_id), second.total]).toEqual([['c-site'], 2]);
      expect(one.status).toBe(404);
      expect((await deleting).status).toBe(204);
      expect((await get('/v1/apps')).body).toMatchObject({ total: 2 });
    } finally {
      events.close();
    }
  });
});
