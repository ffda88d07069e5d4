import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { tarGz, tarGzDir } from '../support/tarball.js';

const ALICE = 'alice-key-0123456789abcdef';
const BOB = 'bob-key-0123456789abcdef';
const gzipAsync = promisify(gzip);

const keys = [
  { key: ALICE, name: 'alice' },
  { key: BOB, name: 'bob' },
];

describe('deploy engine end to end (real bwrap sandboxes)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ auth: { apiKeys: keys }, runtime: { poolSize: 1 } });
  });
  afterAll(() => server.stop());

  it.each([
    ['static', 'Hello from a static Slipway app'],
    ['node', 'hello from node'],
    ['python', 'hello from python'],
  ])('deploys the %s example and its URL answers', async (example, expected) => {
    const source = await tarGzDir(join('examples', example));
    const res = await deploy(server.baseURL, ALICE, { name: `ex-${example}` }, source);
    expect(res.status).toBe(200);
    expect(res.body.app_id).toBe(`ex-${example}`);
    expect(res.body.url).toMatch(new RegExp(`^http://ex-${example}\\.localhost:\\d+$`));
    const page = await fetchApp(String(res.body.url));
    expect(page.status).toBe(200);
    expect(page.body).toContain(expected);
    const app = await call(server.baseURL, `/v1/apps/ex-${example}`, { token: ALICE });
    expect(app.body).toMatchObject({
      app_id: `ex-${example}`,
      owner: 'apikey-alice',
      phase: 'Ready',
      runtime: { lane: 'fast', template: example },
    });
  });

  it('injects env items into the app', async () => {
    const source = await tarGzDir('examples/node');
    const res = await deploy(
      server.baseURL,
      ALICE,
      { name: 'env-app', env: [{ name: 'GREETING', value: 'hi there' }] },
      source,
    );
    expect(res.status).toBe(200);
    const page = await fetchApp(`${String(res.body.url)}/env`);
    expect(JSON.parse(page.body)).toMatchObject({ GREETING: 'hi there' });
  });

  it('keeps owners apart: lists, gets, deletes and names', async () => {
    const source = await tarGzDir('examples/static');
    expect((await deploy(server.baseURL, BOB, { name: 'bob-site' }, source)).status).toBe(200);

    const aliceList = await call(server.baseURL, '/v1/apps', { token: ALICE });
    const aliceIds = (aliceList.body as { items: { app_id: string }[] }).items.map((a) => a.app_id);
    expect(aliceIds).not.toContain('bob-site');
    expect((aliceList.body as { total: number }).total).toBe(aliceIds.length);

    const bobList = await call(server.baseURL, '/v1/apps', { token: BOB });
    expect(bobList.body).toMatchObject({ total: 1, items: [{ app_id: 'bob-site' }] });

    for (const [method, path] of [
      ['GET', '/v1/apps/bob-site'],
      ['DELETE', '/v1/apps/bob-site'],
      ['POST', '/v1/apps/bob-site/suspend'],
      ['POST', '/v1/apps/bob-site/resume'],
    ] as const) {
      const res = await call(server.baseURL, path, { method, token: ALICE });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body).toMatchObject({ code: 'not_found' });
    }

    const taken = await deploy(server.baseURL, ALICE, { name: 'bob-site' }, source);
    expect(taken.status).toBe(409);
    expect(taken.body).toMatchObject({ code: 'name_taken' });
    const still = await fetchApp(`http://bob-site.localhost:${new URL(server.baseURL).port}/`);
    expect(still.body).toContain('Hello from a static Slipway app');
  });

  it('pages the list with limit and offset, total counting everything visible', async () => {
    const page = await call(server.baseURL, '/v1/apps?limit=1&offset=1', { token: ALICE });
    const body = page.body as { items: unknown[]; total: number };
    expect(body.items).toHaveLength(1);
    expect(body.total).toBeGreaterThanOrEqual(4);
  });

  it('redeploys an app as a new version, then deletes it and its sandbox', async () => {
    const v1 = await tarGz({ 'index.html': '<h1>one</h1>' });
    const v2 = await tarGz({ 'index.html': '<h1>two</h1>' });
    const first = await deploy(server.baseURL, ALICE, { name: 'redeploy' }, v1);
    expect((await fetchApp(String(first.body.url))).body).toContain('one');
    const second = await deploy(server.baseURL, ALICE, { name: 'redeploy' }, v2);
    expect(second.status).toBe(200);
    expect((await fetchApp(String(second.body.url))).body).toContain('two');

    const del = await call(server.baseURL, '/v1/apps/redeploy', { method: 'DELETE', token: ALICE });
    expect(del.status).toBe(204);
    expect((await call(server.baseURL, '/v1/apps/redeploy', { token: ALICE })).status).toBe(404);
    expect((await fetchApp(String(first.body.url))).status).toBe(404);
    const blobs = readdirSync(join(server.dataDir, 'sources')).filter((f) =>
      f.startsWith('redeploy.'),
    );
    expect(blobs).toEqual([]);
  });

  it('fails an app that exits at start at once, with its exit code and last log lines', async () => {
    const source = await tarGz({
      'package.json': JSON.stringify({ name: 'crash', main: 'server.js' }),
      'server.js': 'console.log("booting the crasher"); process.exit(3);',
    });
    const res = await deploy(server.baseURL, ALICE, { name: 'crasher' }, source);
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({
      code: 'deploy_failed',
      details: { app_id: 'crasher', phase: 'Failed', reason: 'AppExited' },
    });
    expect(String((res.body.details as { message: string }).message)).toContain('3');
    expect(JSON.stringify(res.body)).toContain('booting the crasher');
    const app = await call(server.baseURL, '/v1/apps/crasher', { token: ALICE });
    expect(app.body).toMatchObject({ phase: 'Failed', reason: 'AppExited' });
  });

  it('fails a source it cannot run with a reason that says what to add', async () => {
    const res = await deploy(
      server.baseURL,
      ALICE,
      { name: 'nothing' },
      await tarGz({ 'notes.txt': 'hi' }),
    );
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({ code: 'deploy_failed', details: { reason: 'NoEntrypoint' } });
    const app = await call(server.baseURL, '/v1/apps/nothing', { token: ALICE });
    expect(app.body).toMatchObject({ phase: 'Failed', reason: 'NoEntrypoint' });
  });

  it('suspends and resumes an app on request, and wakes it on a request to its URL', async () => {
    const source = await tarGzDir('examples/node');
    const res = await deploy(server.baseURL, ALICE, { name: 'sleepy' }, source);
    const suspended = await call(server.baseURL, '/v1/apps/sleepy/suspend', {
      method: 'POST',
      token: ALICE,
    });
    expect(suspended.body).toMatchObject({ phase: 'Suspended' });
    const woken = await fetchApp(String(res.body.url));
    expect(woken.status).toBe(200);
    expect(woken.body).toContain('hello from node');
    await waitForPhase(server.baseURL, ALICE, 'sleepy', ['Ready']);
    await call(server.baseURL, '/v1/apps/sleepy/suspend', { method: 'POST', token: ALICE });
    const resumed = await call(server.baseURL, '/v1/apps/sleepy/resume', {
      method: 'POST',
      token: ALICE,
    });
    expect(resumed.body).toMatchObject({ phase: 'Ready' });
  });

  it('answers an unknown app name with a 404 page', async () => {
    const res = await fetchApp(`http://no-such-app.localhost:${new URL(server.baseURL).port}/`);
    expect(res.status).toBe(404);
    expect(res.body).toContain('no-such-app');
  });
});

describe('bad deploys get a clear 4xx and leave nothing behind', () => {
  let server: TestServer;
  let bombSource: Buffer;
  beforeAll(async () => {
    // Off the event loop: compressing 600 MB takes seconds on a busy machine, and the server runs
    // in this process; blocked that long, it would find the client's idle keep-alive connection
    // past headersTimeout and close it under the next request. Made once, before the tests: the
    // test timed out at 30 s at a load of 20 with the compression inside it (9 s of it alone at a
    // load of 11), while what it is about, the server's inflating, took 3-4 s at that load.
    [server, bombSource] = await Promise.all([
      startTestServer({ auth: { apiKeys: keys }, runtime: { poolSize: 0 } }),
      gzipAsync(Buffer.alloc(600 * 1024 * 1024), { level: 9 }),
    ]);
  });
  afterAll(() => server.stop());

  const good = () => tarGz({ 'index.html': 'ok' });

  it.each([
    [
      'no token',
      async () => deploy(server.baseURL, undefined, { name: 'x1' }, await good()),
      401,
      'unauthenticated',
    ],
    [
      'missing name',
      async () => deploy(server.baseURL, ALICE, {}, await good()),
      400,
      'missing_name',
    ],
    [
      'missing metadata',
      async () => deploy(server.baseURL, ALICE, undefined, await good()),
      400,
      'missing_name',
    ],
    [
      'missing source',
      async () => deploy(server.baseURL, ALICE, { name: 'x2' }, undefined),
      400,
      'missing_source',
    ],
    [
      'bad name',
      async () => deploy(server.baseURL, ALICE, { name: 'Bad_Name' }, await good()),
      400,
      'bad_metadata',
    ],
    [
      'name too long',
      async () => deploy(server.baseURL, ALICE, { name: 'a'.repeat(64) }, await good()),
      400,
      'bad_metadata',
    ],
    [
      'metadata not JSON',
      async () => deploy(server.baseURL, ALICE, '{name: x3', await good()),
      400,
      'bad_metadata',
    ],
    [
      'bad lane',
      async () =>
        deploy(server.baseURL, ALICE, { name: 'x4', runtime: { lane: 'warp' } }, await good()),
      400,
      'bad_metadata',
    ],
    [
      'bad env item',
      async () =>
        deploy(
          server.baseURL,
          ALICE,
          { name: 'x5', env: [{ name: '1X', value: 'v' }] },
          await good(),
        ),
      400,
      'bad_metadata',
    ],
    [
      'bad ttl',
      async () => deploy(server.baseURL, ALICE, { name: 'x6', ttl: '7d' }, await good()),
      400,
      'bad_metadata',
    ],
    [
      'bad allowed host',
      async () =>
        deploy(
          server.baseURL,
          ALICE,
          { name: 'x7', egress: { allowed_hosts: ['a b'] } },
          await good(),
        ),
      400,
      'bad_metadata',
    ],
    [
      'non-gzip source',
      async () => deploy(server.baseURL, ALICE, { name: 'x8' }, Buffer.from('plain text')),
      400,
      'bad_request',
    ],
    [
      'over 50 MB',
      async () => deploy(server.baseURL, ALICE, { name: 'x9' }, Buffer.alloc(51 * 1024 * 1024, 1)),
      413,
      'payload_too_large',
    ],
    [
      'path traversal',
      async () =>
        deploy(
          server.baseURL,
          ALICE,
          { name: 'x10' },
          await tarGz({ '../evil.js': 'x', 'index.html': 'ok' }),
        ),
      400,
      'bad_request',
    ],
    [
      'symlink escape',
      async () =>
        deploy(
          server.baseURL,
          ALICE,
          { name: 'x11' },
          await tarGz({
            'index.html': 'ok',
            link: { type: 'symlink', target: '../../etc/passwd' },
          }),
        ),
      400,
      'bad_request',
    ],
    [
      'gzip bomb',
      async () => deploy(server.baseURL, ALICE, { name: 'x12' }, bombSource),
      413,
      'payload_too_large',
    ],
  ])('%s', async (_what, attempt, status, code) => {
    const res = await attempt();
    expect(res.status).toBe(status);
    expect(res.body).toMatchObject({ code, message: expect.any(String) });
  });

  it('left no app rows and no source blobs behind', async () => {
    const list = await call(server.baseURL, '/v1/apps', { token: ALICE });
    expect(list.body).toMatchObject({ total: 0, items: [] });
    const sources = join(server.dataDir, 'sources');
    expect(existsSync(sources) ? readdirSync(sources) : []).toEqual([]);
  });

  it('answers a non-multipart deploy with bad_multipart', async () => {
    const res = await call(server.baseURL, '/v1/deploy', {
      method: 'POST',
      token: ALICE,
      json: { name: 'x' },
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'bad_multipart' });
  });
});

describe('restart', () => {
  it('serves every Ready app again after a restart, without a new deploy', async () => {
    const first = await startTestServer({ auth: { apiKeys: keys }, runtime: { poolSize: 1 } });
    const dataDir = first.dataDir;
    const res = await deploy(
      first.baseURL,
      ALICE,
      { name: 'survivor' },
      await tarGzDir('examples/node'),
    );
    expect(res.status).toBe(200);
    await first.close();

    const second = await startTestServer(
      { auth: { apiKeys: keys }, runtime: { poolSize: 1 } },
      dataDir,
    );
    try {
      const port = new URL(second.baseURL).port;
      const page = await fetchApp(`http://survivor.localhost:${port}/`);
      expect(page.status).toBe(200);
      expect(page.body).toContain('hello from node');
      const app = await waitForPhase(second.baseURL, ALICE, 'survivor', ['Ready']);
      expect(app.url).toBe(`http://survivor.localhost:${port}`);
    } finally {
      await second.stop();
    }
  });
});
