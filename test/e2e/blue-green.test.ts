/**
 * Blue/green through the real API, real SQLite and real sandboxes (#10): a redeploy that fails at
 * any stage we can provoke (nothing to run, exits at start, never listens, install fails, build
 * fails) leaves the version that served serving. A steady request loop on the app's URL runs
 * through each failed redeploy and after it, and every request must get version 1's answer.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeApp } from '../support/apps.js';
import { deploy, fetchApp } from '../support/deploy.js';
import { requestLoop } from '../support/request-loop.js';
import { SseClient } from '../support/sse.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';

const ALICE = 'alice-key-0123456789abcdef';
const SLOW = 120_000;

const server_js = (body: string) =>
  `require('node:http').createServer(${body}).listen(process.env.PORT);`;
const general = (pkg: object, files: Record<string, string> = {}) =>
  tarGz({
    'package.json': JSON.stringify({ name: 'bg', version: '1.0.0', main: 'server.js', ...pkg }),
    'server.js': server_js("(q, s) => s.end('unreachable')"),
    ...files,
  });

/** The failing candidates, one per stage, each with the reason its version must record. */
interface Stage {
  stage: string;
  reason: RegExp;
  /** What the version's message must say, when the stage has a telling one. */
  says?: RegExp;
  source: () => Promise<Buffer>;
  lane?: string;
}

const STAGES: Stage[] = [
  {
    stage: 'cannot be classified (nothing to run)',
    reason: /^NoEntrypoint$/,
    source: () => tarGz({ 'notes.txt': 'nothing to run here' }),
  },
  {
    stage: 'exits at start',
    reason: /^AppExited$/,
    source: () =>
      tarGz({
        'package.json': JSON.stringify({ name: 'bg', main: 'server.js' }),
        'server.js': 'console.error("v2 cannot start"); process.exit(1);',
      }),
  },
  {
    stage: 'never listens (health never passes)',
    reason: /./,
    source: () =>
      tarGz({
        'package.json': JSON.stringify({ name: 'bg', main: 'server.js' }),
        'server.js': 'setInterval(() => console.log("busy, not listening"), 200);',
      }),
  },
  {
    stage: 'install fails',
    reason: /^InstallFailed$/,
    says: /npm install failed/,
    lane: 'general',
    source: () => general({ dependencies: { 'not-here': 'file:./no-such-package.tgz' } }),
  },
  {
    stage: 'build fails',
    reason: /^BuildFailed$|^InstallFailed$/,
    says: /build failed with exit code 3/,
    lane: 'general',
    source: () => general({ scripts: { build: 'exit 3' } }),
  },
];

describe('blue/green redeploys (real HTTP, real sandboxes, real SQLite)', () => {
  let server: TestServer;
  const get = async (path: string) =>
    (await call(server.baseURL, path, { token: ALICE })).body as Record<string, unknown>;
  const versions = async (app: string) =>
    ((await get(`/v1/apps/${app}/versions`)).items ?? []) as Record<string, unknown>[];

  // Our own data dir, so that a second server can open the same SQLite file.
  const dataDir = mkdtempSync(join(tmpdir(), 'slipway-bg-'));
  const start = () =>
    startTestServer(
      {
        auth: { apiKeys: [{ key: ALICE, name: 'alice' }] },
        // Short, so that "never listens" fails well inside the deploy's wait.
        runtime: { poolSize: 1, startTimeout: '4s' },
      },
      dataDir,
    );
  beforeAll(async () => {
    server = await start();
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  for (const [i, { stage, reason, says, source, lane }] of STAGES.entries()) {
    it(
      `keeps version 1 serving every request when version 2 ${stage}`,
      async () => {
        const name = `bg-${i}`;
        const first = await deploy(server.baseURL, ALICE, { name }, await nodeApp('v1'));
        expect(first.status, JSON.stringify(first.body)).toBe(200);
        const url = String(first.body.url);
        const loop = requestLoop(url, (body) => body.startsWith('v1 '));
        await until(() => loop.count() >= 5);

        const runtime = lane ? { lane } : {};
        const env = [{ name: 'CANDIDATE_ONLY', value: 'x' }];
        const bad = await deploy(server.baseURL, ALICE, { name, runtime, env }, await source());
        const during = loop.count();
        await until(() => loop.count() >= during + 20);
        const { answers, failed } = await loop.stop();

        expect(bad.status, JSON.stringify(bad.body)).toBe(500);
        expect(bad.body).toMatchObject({
          code: 'deploy_failed',
          message: expect.stringMatching(/version 1 is still serving$/) as unknown,
          details: { phase: 'Ready', live_version: 1 },
        });
        expect(failed).toEqual([]);
        console.log(`failed redeploy (${stage}): ${answers.length} requests, 0 failed`);
        const app = await get(`/v1/apps/${name}`);
        expect(app).toMatchObject({
          phase: 'Ready',
          live_version: 1,
          last_deploy: { version: 2, outcome: 'Failed' },
          // What serves is version 1's release, not the failed candidate's.
          runtime: { lane: 'fast', template: 'node' },
          env: [],
        });
        const [v2, v1] = await versions(name);
        expect(v2).toMatchObject({ version: 2, outcome: 'Failed', live: false });
        expect(String(v2?.reason)).toMatch(reason);
        if (says) expect(String(v2?.message)).toMatch(says);
        expect(v1).toMatchObject({ version: 1, outcome: 'Ready', live: true });

        // The failed version's own lines, with Slipway's note about it.
        const logs = await call(server.baseURL, `/v1/apps/${name}/logs?version=2`, {
          token: ALICE,
        });
        expect(logs.text).toMatch(/\[slipway\] version 2 failed: .*; version 1 is still serving/);
        expect(logs.text).toMatch(/^id: 2$/m);
        expect(logs.text).not.toMatch(/^id: 1$/m);
      },
      SLOW,
    );
  }

  it('fails a first deploy that cannot start: nothing serves', async () => {
    const bad = await deploy(
      server.baseURL,
      ALICE,
      { name: 'bg-first' },
      await tarGz({
        'package.json': JSON.stringify({ name: 'bg', main: 'server.js' }),
        'server.js': 'process.exit(2);',
      }),
    );
    expect(bad.body).toMatchObject({ code: 'deploy_failed', details: { phase: 'Failed' } });
    expect(String(bad.body.message)).not.toContain('still serving');
    expect(await get('/v1/apps/bg-first')).toMatchObject({
      phase: 'Failed',
      live_version: null,
      last_deploy: { version: 1, outcome: 'Failed', reason: 'AppExited' },
    });
  });

  it(
    'rolls back the whole release: env comes back with the source, and values never show',
    async () => {
      const app = () =>
        tarGz({
          'package.json': JSON.stringify({ name: 'color', main: 'server.js' }),
          'server.js': server_js("(q, s) => s.end(process.env.COLOR + ' ' + process.env.LABEL)"),
        });
      const events = await SseClient.open(`${server.baseURL}/api/events`, ALICE);
      const env = (color: string) => [
        { name: 'COLOR', value: color },
        { name: 'LABEL', value: `secret-${color}-value` },
      ];
      const v1 = await deploy(
        server.baseURL,
        ALICE,
        { name: 'bg-env', env: env('red') },
        await app(),
      );
      const url = String(v1.body.url);
      expect(await fetchText(url)).toBe('red secret-red-value');
      await deploy(server.baseURL, ALICE, { name: 'bg-env', env: env('blue') }, await app());
      expect(await fetchText(url)).toBe('blue secret-blue-value');

      const rolled = await call(server.baseURL, '/v1/apps/bg-env/rollback', {
        method: 'POST',
        token: ALICE,
        json: { version: 1 },
      });
      expect(rolled.status, rolled.text).toBe(200);
      expect(await fetchText(url)).toBe('red secret-red-value');

      const views = [
        rolled.text,
        (await call(server.baseURL, '/v1/apps/bg-env', { token: ALICE })).text,
        (await call(server.baseURL, '/v1/apps', { token: ALICE })).text,
        (await call(server.baseURL, '/v1/apps/bg-env/versions', { token: ALICE })).text,
      ];
      await events.waitFor((f) => (f.data ?? '').includes('"version":3'), 'version 3 events');
      events.close();
      views.push(JSON.stringify(events.frames));
      for (const text of views) expect(text).not.toMatch(/secret-(red|blue)-value/);
      expect(await get('/v1/apps/bg-env')).toMatchObject({
        live_version: 3,
        env: [{ name: 'COLOR' }, { name: 'LABEL' }],
      });
      const [v3] = await versions('bg-env');
      expect(v3).toMatchObject({
        version: 3,
        rolled_back_from: 1,
        outcome: 'Ready',
        live: true,
        env: [{ name: 'COLOR' }, { name: 'LABEL' }],
      });
      const logs = await call(server.baseURL, '/v1/apps/bg-env/logs?version=3', { token: ALICE });
      expect(logs.text).toContain('[slipway] rolled back to 1');
    },
    SLOW,
  );

  it('keeps live_version and outcomes across a restart (SQLite)', async () => {
    const before = { app: await get('/v1/apps/bg-0'), versions: await versions('bg-0') };
    await server.stop();
    server = await start();
    const app = await get('/v1/apps/bg-0');
    expect(app).toMatchObject({ live_version: 1, last_deploy: before.app.last_deploy });
    expect(await versions('bg-0')).toEqual(before.versions);
    expect((await fetchText(String(app.url))).startsWith('v1 ')).toBe(true);
  });
});

const fetchText = async (url: string): Promise<string> => (await fetchApp(url)).body;

/** Polls `done` every 20 ms; the test's own timeout bounds it. */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 20));
}
