import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { assertRegistryReachable, depApp, SERVER_BODY } from '../support/general-lane-apps.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';

/**
 * Issue 10 item 4 through the API: a general-lane app installs once per release. A wake (and
 * any later start of the release) unpacks the built tree it left, so the app's log gains no
 * second round of `[install]` lines.
 */
const ALICE = 'alice-key-0123456789abcdef';
const INSTALL = 120_000;
let server: TestServer;

beforeAll(async () => {
  await assertRegistryReachable();
  server = await startTestServer({
    auth: { apiKeys: [{ key: ALICE, name: 'alice' }] },
    runtime: { poolSize: 1 },
  });
}, INSTALL);
afterAll(() => server?.stop());

/** The app's log snapshot, one line each. */
async function logLines(appId: string): Promise<string[]> {
  const res = await fetch(`${server.baseURL}/v1/apps/${appId}/logs`, {
    headers: { authorization: `Bearer ${ALICE}` },
  });
  return (await res.text()).split('\n').filter((line) => line.startsWith('data: '));
}

/** How many install lines the app's log snapshot holds. */
async function installLines(appId: string): Promise<number> {
  return (await logLines(appId)).filter((line) => line.includes('[install]')).length;
}

describe('general lane wake', () => {
  it(
    'wakes a suspended general-lane app from its built tree, without installing again',
    async () => {
      const res = await deploy(
        server.baseURL,
        ALICE,
        { name: 'gl-wake' },
        await tarGz(await depApp()),
      );
      expect([200, 202], JSON.stringify(res.body)).toContain(res.status);
      const app = await waitForPhase(
        server.baseURL,
        ALICE,
        'gl-wake',
        ['Ready', 'Failed'],
        INSTALL,
      );
      expect(app).toMatchObject({ phase: 'Ready', runtime: { lane: 'general' } });
      const installed = await installLines('gl-wake');
      expect(installed).toBeGreaterThan(0);
      // Slipway's own notes frame the install.
      const notes = (await logLines('gl-wake')).filter((line) => line.includes('[slipway]'));
      expect(notes.join('\n')).toMatch(/\[slipway\] version 1 building: installing/);
      expect(notes.join('\n')).toMatch(/\[slipway\] version 1 installed in \d+\.\d s \(npm ci/);

      const suspended = await call(server.baseURL, '/v1/apps/gl-wake/suspend', {
        method: 'POST',
        token: ALICE,
      });
      expect(suspended.body).toMatchObject({ phase: 'Suspended' });
      const woken = await fetchApp(String(app.url));
      expect(woken).toMatchObject({ status: 200, body: SERVER_BODY });
      await waitForPhase(server.baseURL, ALICE, 'gl-wake', ['Ready']);
      expect(await installLines('gl-wake')).toBe(installed);
      const after = (await logLines('gl-wake')).join('\n');
      expect(after).toMatch(/\[slipway\] version 1: its built tree restored, no install/);
    },
    INSTALL,
  );
});
