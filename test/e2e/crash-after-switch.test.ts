/**
 * A release that crashes soon after going live rolls back by itself (#28): real HTTP, real
 * sandboxes, real SQLite. Version 2 starts, answers its health check and takes the traffic, then
 * throws 1.5 s later. Twenty clients hammer the app's URL all along: not one request may fail,
 * version 1 must serve again within the stability window, and the app must say why.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/cli/api-client.js';
import { waitForOutcome } from '../../src/cli/phase-watch.js';
import { nodeApp } from '../support/apps.js';
import { deploy } from '../support/deploy.js';
import { requestLoop } from '../support/request-loop.js';
import { SseClient } from '../support/sse.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';

const ALICE = 'alice-key-0123456789abcdef';
const CLIENTS = 20;
// Not the default (10s): the messages below prove the configured window is the one applied.
const WINDOW_MS = 8_000;

/** Answers like nodeApp, and throws 1.5 s after it starts listening. */
const crashesSoon = () =>
  tarGz({
    'package.json': JSON.stringify({ name: 'crashes-soon', main: 'server.js' }),
    'server.js': `
const boot = require('node:crypto').randomUUID();
require('node:http')
  .createServer((req, res) => res.end('v2 ' + boot + '\\n'))
  .listen(process.env.PORT, () => {
    setTimeout(() => { throw new Error('v2 gave up after going live'); }, 1500);
  });
`,
  });

/** Answers like nodeApp, then closes its port 1.5 s after it starts listening, yet lives on. */
const stopsAnswering = () =>
  tarGz({
    'package.json': JSON.stringify({ name: 'stops-answering', main: 'server.js' }),
    'server.js': `
const boot = require('node:crypto').randomUUID();
const server = require('node:http')
  .createServer((req, res) => res.end('v2 ' + boot + '\\n'))
  .listen(process.env.PORT, () => {
    setTimeout(() => { server.close(); server.closeAllConnections(); }, 1500);
  });
setInterval(() => {}, 1000);
`,
  });

describe('a release that crashes after the switch (real HTTP, sandboxes, SQLite)', () => {
  let server: TestServer;
  const get = async (path: string) =>
    (await call(server.baseURL, path, { token: ALICE })).body as Record<string, unknown>;

  beforeAll(async () => {
    server = await startTestServer({
      auth: { apiKeys: [{ key: ALICE, name: 'alice' }] },
      runtime: { poolSize: 2 },
      releases: { stabilityWindow: `${WINDOW_MS / 1000}s` },
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  /**
   * Deploys version 1, runs 20 request loops, deploys `candidate` as version 2 and waits for the
   * rollback; returns what version 2's outcome message said.
   */
  async function throughSwitch(name: string, candidate: Buffer): Promise<string> {
    const first = await deploy(server.baseURL, ALICE, { name }, await nodeApp('v1'));
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const url = String(first.body.url);
    const events = await SseClient.open(`${server.baseURL}/api/events`, ALICE);

    const loops = Array.from({ length: CLIENTS }, () =>
      requestLoop(url, (body) => /^v[12] /.test(body)),
    );
    await until(() => loops.every((l) => l.count() >= 3));

    // The answer comes at the switch, as for any deploy that served.
    const second = await deploy(server.baseURL, ALICE, { name }, candidate);
    const switchedAt = Date.now();
    expect(second.status, JSON.stringify(second.body)).toBe(200);

    const rolledBack = await events.waitFor(
      (f) =>
        f.event === 'app' &&
        (f.data ?? '').includes(`"app_id":"${name}"`) &&
        (f.data ?? '').includes('CrashedAfterSwitch'),
      'the rollback event',
      WINDOW_MS + 10_000,
    );
    const backAfterMs = Date.now() - switchedAt;
    events.close();
    expect(JSON.parse(rolledBack.data ?? '{}')).toMatchObject({ phase: 'Ready', version: 1 });
    expect(backAfterMs).toBeLessThan(WINDOW_MS);

    // Every client gets more answers after the rollback; those all come from version 1.
    const counts = loops.map((l) => l.count());
    await until(() => loops.every((l, i) => l.count() >= (counts[i] ?? 0) + 5));
    const results = await Promise.all(loops.map((l) => l.stop()));

    const failed = results.flatMap((r) => r.failed);
    const answers = results.flatMap((r) => r.answers);
    console.log(
      `${name}: ${answers.length} requests from ${CLIENTS} clients, ` +
        `${failed.length} failed; version 1 back ${backAfterMs} ms after the switch`,
    );
    expect(failed).toEqual([]);
    expect(answers.some((a) => a.body.startsWith('v2 '))).toBe(true);
    const after = results.flatMap((r, i) => r.answers.slice((counts[i] ?? 0) + 1));
    expect(after.length).toBeGreaterThan(0);
    expect(after.filter((a) => !a.body.startsWith('v1 '))).toEqual([]);

    expect(await get(`/v1/apps/${name}`)).toMatchObject({
      phase: 'Ready',
      live_version: 1,
      last_deploy: { version: 2, outcome: 'Failed', reason: 'CrashedAfterSwitch' },
    });
    const versions = ((await get(`/v1/apps/${name}/versions`)).items ?? []) as Array<
      Record<string, unknown>
    >;
    expect(versions[0]).toMatchObject({
      version: 2,
      outcome: 'Failed',
      reason: 'CrashedAfterSwitch',
      live: false,
    });
    expect(versions[1]).toMatchObject({ version: 1, outcome: 'Ready', live: true });
    const logs = await call(server.baseURL, `/v1/apps/${name}/logs?version=2`, { token: ALICE });
    expect(logs.text).toMatch(
      /\[slipway\] version 2 failed: CrashedAfterSwitch: .*; version 1 serves again/,
    );
    return String(versions[0]?.message);
  }

  it('serves every request of 20 clients while version 2 crashes and version 1 comes back', async () => {
    const message = await throughSwitch('crashy', await crashesSoon());
    expect(message).toMatch(/^version 2 exited with code 1 within 8s of going live/);
    expect(message).toMatch(/v2 gave up after going live/);

    // What `slipway deploy` reports when its check of the outcome comes after the rollback.
    const api = new ApiClient({ url: server.baseURL, token: ALICE, from: 'env' });
    await expect(waitForOutcome(api, 'crashy')).rejects.toMatchObject({
      code: 'deploy_failed',
      // What serves is said on the first line; the app's last lines follow it.
      message: expect.stringMatching(
        /^CrashedAfterSwitch: [^\n]*; version 1 serves again(\n|$)/,
      ) as unknown,
      hint: 'see the logs: slipway logs crashy --version 2',
    });
  }, 120_000);

  it('hands the traffic back just as well when version 2 lives on but stops answering', async () => {
    const message = await throughSwitch('mute', await stopsAnswering());
    expect(message).toMatch(/^version 2 stopped answering within 8s of going live: /);
  }, 120_000);
});

/** Polls `done` every 20 ms; the test's own timeout bounds it. */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 20));
}
