import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import {
  assertRegistryReachable,
  depApp,
  MISSING_DEP,
  missingDepApp,
  SERVER_BODY,
} from '../support/general-lane-apps.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';

const ALICE = 'alice-key-0123456789abcdef';
const INSTALL = 120_000;

describe('general lane end to end (real HTTP, real sandboxes, the host registry)', () => {
  let server: TestServer;
  beforeAll(async () => {
    await assertRegistryReachable();
    server = await startTestServer({
      auth: { apiKeys: [{ key: ALICE, name: 'alice' }] },
      runtime: { poolSize: 1 },
    });
  }, INSTALL);
  afterAll(() => server?.stop());

  it(
    'deploys a node app with an unvendored dependency: installed, Ready, served',
    async () => {
      const source = await tarGz(await depApp());
      const started = Date.now();
      const res = await deploy(server.baseURL, ALICE, { name: 'gl-dep' }, source);
      const answeredMs = Date.now() - started;
      expect([200, 202], JSON.stringify(res.body)).toContain(res.status);
      const app = await waitForPhase(server.baseURL, ALICE, 'gl-dep', ['Ready', 'Failed'], INSTALL);
      const readyMs = Date.now() - started;
      expect(app).toMatchObject({
        phase: 'Ready',
        runtime: { lane: 'general', template: 'node' },
      });
      const page = await fetchApp(String(app.url));
      expect(page.status).toBe(200);
      expect(page.body).toBe(SERVER_BODY);
      console.log(
        `general-lane deploy: answered ${res.status} after ${answeredMs} ms, Ready after ${readyMs} ms, ` +
          `served after ${Date.now() - started} ms`,
      );
    },
    INSTALL,
  );

  it(
    'fails a deploy whose install fails with InstallFailed, npm exit code and install lines',
    async () => {
      const res = await deploy(
        server.baseURL,
        ALICE,
        { name: 'gl-missing' },
        await tarGz(missingDepApp()),
      );
      if (res.status !== 202) {
        expect(res.status).toBe(500);
        expect(res.body).toMatchObject({
          code: 'deploy_failed',
          details: { app_id: 'gl-missing', phase: 'Failed', reason: 'InstallFailed' },
        });
        // The app's log lines carry the install's output, tagged as such.
        expect(JSON.stringify(res.body)).toContain('[install] npm error');
      }
      const app = await waitForPhase(
        server.baseURL,
        ALICE,
        'gl-missing',
        ['Ready', 'Failed'],
        INSTALL,
      );
      expect(app).toMatchObject({ phase: 'Failed', reason: 'InstallFailed' });
      expect(String(app.message)).toMatch(
        /^version 1 did not start: npm ci failed with exit code [1-9]\d*; last lines:\n/,
      );
      expect(String(app.message)).toContain(MISSING_DEP);
      const fetched = await call(server.baseURL, '/v1/apps/gl-missing', { token: ALICE });
      expect(fetched.body).toMatchObject({ phase: 'Failed', reason: 'InstallFailed' });
    },
    INSTALL,
  );
});
