import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';

const ALICE = 'alice-key-0123456789abcdef';
const INSTALL = 120_000;
const BUILD = 'mkdir -p out && sed s/SOURCE/BUILT/ index.src.html > out/index.html';

/**
 * runtime.build through the real API and real sandboxes. The sources have no dependencies, so
 * `npm install` needs no registry: what is proved is that the user's command ran in /app and its
 * output, not the source, is what the URL serves.
 */
describe('runtime.build end to end (real HTTP, real sandboxes)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      auth: { apiKeys: [{ key: ALICE, name: 'alice' }] },
      runtime: { poolSize: 1 },
    });
  }, INSTALL);
  afterAll(() => server?.stop());

  it(
    'runs the build command after the install and serves what it wrote',
    async () => {
      const source = await tarGz({
        'package.json': JSON.stringify({ name: 'built-site', version: '1.0.0' }),
        'index.src.html': '<h1>SOURCE</h1>\n',
      });
      const metadata = { name: 'rb-site', runtime: { template: 'static', build: BUILD } };
      const res = await deploy(server.baseURL, ALICE, metadata, source);
      expect([200, 202], JSON.stringify(res.body)).toContain(res.status);
      const app = await waitForPhase(
        server.baseURL,
        ALICE,
        'rb-site',
        ['Ready', 'Failed'],
        INSTALL,
      );
      expect(app, JSON.stringify(app)).toMatchObject({
        phase: 'Ready',
        runtime: { lane: 'general', template: 'static', build: BUILD },
      });
      const page = await fetchApp(String(app.url));
      expect(page.status).toBe(200);
      expect(page.body).toBe('<h1>BUILT</h1>\n');
      const versions = await call(server.baseURL, '/v1/apps/rb-site/versions', { token: ALICE });
      expect(versions.body).toMatchObject({
        items: [{ version: 1, runtime: { lane: 'general', template: 'static', build: BUILD } }],
      });
    },
    INSTALL,
  );

  it(
    "rolls back to a version's own build command, not the newest one",
    async () => {
      const source = await tarGz({ 'index.src.html': '<h1>SOURCE</h1>\n' });
      const second = BUILD.replace('BUILT', 'SECOND');
      const v1 = await deploy(
        server.baseURL,
        ALICE,
        { name: 'rb-roll', runtime: { template: 'static', build: BUILD } },
        source,
      );
      expect(v1.status, JSON.stringify(v1.body)).toBe(200);
      const url = String(v1.body.url);
      const v2 = await deploy(
        server.baseURL,
        ALICE,
        { name: 'rb-roll', runtime: { template: 'static', build: second } },
        source,
      );
      expect(v2.status, JSON.stringify(v2.body)).toBe(200);
      expect((await fetchApp(url)).body).toBe('<h1>SECOND</h1>\n');
      const rolled = await call(server.baseURL, '/v1/apps/rb-roll/rollback', {
        method: 'POST',
        token: ALICE,
        json: { version: 1 },
      });
      expect(rolled.status, rolled.text).toBe(200);
      expect(rolled.body).toMatchObject({ runtime: { build: BUILD } });
      expect((await fetchApp(url)).body).toBe('<h1>BUILT</h1>\n');
    },
    INSTALL,
  );

  it(
    'fails the version with InstallFailed naming the command and its exit code',
    async () => {
      const source = await tarGz({ 'index.src.html': '<h1>SOURCE</h1>\n' });
      const metadata = { name: 'rb-fail', runtime: { template: 'static', build: 'exit 7' } };
      const res = await deploy(server.baseURL, ALICE, metadata, source);
      expect([202, 500], JSON.stringify(res.body)).toContain(res.status);
      const app = await waitForPhase(
        server.baseURL,
        ALICE,
        'rb-fail',
        ['Ready', 'Failed'],
        INSTALL,
      );
      expect(app).toMatchObject({ phase: 'Failed', reason: 'InstallFailed' });
      expect(String(app.message)).toMatch(
        /^version 1 did not start: exit 7 failed with exit code 7/,
      );
      const versions = await call(server.baseURL, '/v1/apps/rb-fail/versions', { token: ALICE });
      expect(versions.body).toMatchObject({
        items: [{ version: 1, outcome: 'Failed', reason: 'InstallFailed' }],
      });
    },
    INSTALL,
  );
});
