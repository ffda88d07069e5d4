/**
 * Issue #25 item 9: built trees were keyed by app name, not owner, and outlived the app. A new
 * owner of a deleted app's name got the previous owner's built tree ("restored, no install"). They
 * are now keyed by owner too and deleted with the app.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { assertRegistryReachable, depApp, SERVER_BODY } from '../support/general-lane-apps.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { SseClient } from '../support/sse.js';
import { tarGz } from '../support/tarball.js';

const ALICE = 'alice-built-trees-key-0123456789';
const BOB = 'bob-built-trees-key-0123456789';
const INSTALL = 180_000;
const NAME = 'passed-on';

describe("a deleted app's built tree never reaches the next owner of its name", () => {
  let server: TestServer;
  let base: string;
  beforeAll(async () => {
    await assertRegistryReachable();
    server = await startTestServer({
      auth: {
        apiKeys: [
          { key: ALICE, name: 'alice' },
          { key: BOB, name: 'bob' },
        ],
      },
      runtime: { poolSize: 1 },
    });
    base = server.baseURL;
  }, INSTALL);
  afterAll(() => server?.stop());

  const artifacts = (): string[] => readdirSync(join(server.dataDir, 'artifacts'));

  /** Deploys the same general-lane source as `token`; resolves once it serves. */
  async function deployAs(token: string, source: Buffer): Promise<void> {
    const res = await deploy(base, token, { name: NAME }, source);
    expect([200, 202], JSON.stringify(res.body)).toContain(res.status);
    const app = await waitForPhase(base, token, NAME, ['Ready', 'Failed'], INSTALL);
    expect(app).toMatchObject({ phase: 'Ready', runtime: { lane: 'general' } });
    expect((await fetchApp(String(app.url))).body).toBe(SERVER_BODY);
  }

  /** How the app's first version got its dependencies, as its log's Slipway note says. */
  async function howStarted(token: string): Promise<string> {
    for (let i = 0; i < 200; i += 1) {
      const stream = await SseClient.open(`${base}/v1/apps/${NAME}/logs`, token);
      await stream.ended;
      const note = stream.lines.find((line) =>
        /version 1(: its built tree restored| installed in)/.test(line),
      );
      if (note !== undefined) return note;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('the log never said how version 1 started');
  }

  it(
    "installs afresh for the new owner, and the old owner's tree is gone with the app",
    async () => {
      const source = await tarGz(await depApp());
      await deployAs(ALICE, source);
      expect(await howStarted(ALICE)).toContain('installed in');
      expect(artifacts().length).toBe(1);

      const deleted = await call(base, `/v1/apps/${NAME}`, { method: 'DELETE', token: ALICE });
      expect(deleted.status).toBe(204);
      expect(artifacts()).toEqual([]);

      await deployAs(BOB, source);
      const note = await howStarted(BOB);
      expect(note).toContain('installed in');
      expect(note).not.toContain('restored');
    },
    2 * INSTALL,
  );
});
