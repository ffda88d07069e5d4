import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeApp } from '../support/apps.js';
import { fillDisk, mountTmpfs } from '../support/disk.js';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { freePort, startServerProcess, type ServerProcess } from '../support/server-process.js';
import { tarGz } from '../support/tarball.js';

/**
 * A full data disk for a few seconds, against the real server process on a small tmpfs: every
 * change is either refused with 503 storage_unavailable or recorded, nothing acknowledged is lost
 * once space returns or across a restart, and no source blob is left that nothing points to.
 */
const KEY = `disk-admin-${randomBytes(16).toString('hex')}`;
/** A configured key first used while the disk is full: its user is provisioned then. */
const NEWCOMER = `disk-newcomer-${randomBytes(16).toString('hex')}`;
const root = mkdtempSync(join(tmpdir(), 'slipway-diskfull-'));
const dataDir = join(root, 'data');
let unmount: () => void;
const running: ServerProcess[] = [];
let port: number;

beforeAll(async () => {
  unmount = mountTmpfs(dataDir, '48m');
  port = await freePort();
});
afterAll(async () => {
  for (const server of running) await server.stop('SIGKILL');
  unmount();
  rmSync(root, { recursive: true, force: true });
});

async function start(): Promise<ServerProcess> {
  const server = await startServerProcess({
    dataDir,
    port,
    config: {
      auth: {
        apiKeys: [
          { key: KEY, name: 'default', role: 'admin' },
          { key: NEWCOMER, name: 'newcomer' },
        ],
      },
    },
    readyTimeoutMs: 90_000,
  });
  running.push(server);
  return server;
}

async function api(
  server: ServerProcess,
  path: string,
  method = 'GET',
  { token = KEY, body }: { token?: string; body?: unknown } = {},
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const res = await fetch(`${server.baseURL}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
  };
}

/** Answers `<label>` only after waiting `delayMs` to listen: a deploy that is in flight a while. */
const slowApp = (label: string, delayMs: number): Promise<Buffer> =>
  tarGz({
    'package.json': '{"main":"server.js"}',
    'server.js': `setTimeout(() => require('node:http').createServer((q, s) => s.end(${JSON.stringify(label)} + ' ')).listen(process.env.PORT), ${delayMs});`,
  });

const bodyOf = async (server: ServerProcess, app: string): Promise<string> =>
  (await fetchApp(`http://${app}.localhost:${server.port}/`)).body;

function orphanBlobs(): string[] {
  const db = new Database(join(dataDir, 'slipway.db'), { readonly: true, fileMustExist: true });
  try {
    const keys = new Set(db.prepare('SELECT source_key FROM versions').pluck().all() as string[]);
    return readdirSync(join(dataDir, 'sources'))
      .filter((name) => name.endsWith('.tar.gz'))
      .filter((name) => !keys.has(name.slice(0, -'.tar.gz'.length)));
  } finally {
    db.close();
  }
}

describe('a full data disk', () => {
  it('refuses or records every change, loses nothing acknowledged, and leaves no orphan blob', async () => {
    let server = await start();
    for (const name of ['slow', 'redeploy', 'pause', 'gone']) {
      const res = await deploy(server.baseURL, KEY, { name }, await nodeApp(`${name}-v1`));
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }

    // A redeploy in flight when the disk fills: accepted before, Ready after.
    const slow = deploy(server.baseURL, KEY, { name: 'slow' }, await slowApp('slow-v2', 2_500));
    await waitForPhase(server.baseURL, KEY, 'slow', ['Starting']);
    const disk = fillDisk(dataDir);

    // Readiness probes each store at most once a second: it turns within that.
    await expectSoon(async () => (await api(server, '/readyz')).status === 503, 3_000);
    const ready = await api(server, '/readyz');
    const components = (ready.body.details as { components: Record<string, { ok: boolean }> })
      .components;
    expect(components.sources?.ok).toBe(false);

    const redeploy = await deploy(server.baseURL, KEY, { name: 'redeploy' }, await nodeApp('r-v2'));
    expect(redeploy.status).toBe(503);
    expect(redeploy.body).toMatchObject({
      code: 'storage_unavailable',
      message: expect.stringMatching(/^the (source store|database) cannot write: the disk is full/),
    });
    const fresh = await deploy(server.baseURL, KEY, { name: 'fresh' }, await nodeApp('fresh'));
    expect(fresh.status).toBe(503);
    expect(fresh.body.code).toBe('storage_unavailable');
    // Every route, as the admin and as a user never seen before (provisioned now): whatever is
    // refused is refused as 503 storage_unavailable naming a store, never another code.
    const answers = [
      ...(await Promise.all(
        [KEY, NEWCOMER].flatMap((token) => [
          api(server, '/api/whoami', 'GET', { token }),
          api(server, '/v1/apps', 'GET', { token }),
          api(server, '/v1/apps/redeploy/versions', 'GET', { token }),
          api(server, '/v1/templates', 'GET', { token }),
        ]),
      )),
      await api(server, '/v1/audit', 'GET'),
      await api(server, '/api/users', 'POST', { body: { name: 'while-full' } }),
      await api(server, '/api/users/apikey-default', 'PATCH', { body: { role: 'admin' } }),
      await api(server, '/api/departments', 'POST', { body: { id: 'full', name: 'Full' } }),
    ];
    const refused = answers.filter((answer) => answer.status >= 500);
    console.log(`disk-full: ${refused.length} of ${answers.length} route calls refused`);
    for (const answer of refused) {
      expect(answer.status, JSON.stringify(answer.body)).toBe(503);
      expect(answer.body).toMatchObject({
        code: 'storage_unavailable',
        details: { store: expect.stringMatching(/^(database|source store|data dir)$/) },
      });
    }
    expect(answers.filter((answer) => answer.status >= 400 && answer.status < 500)).toEqual([]);
    const suspend = await api(server, '/v1/apps/pause/suspend', 'POST');
    const remove = await api(server, '/v1/apps/gone', 'DELETE');
    for (const answer of [suspend, remove]) {
      expect([200, 204, 503], JSON.stringify(answer.body)).toContain(answer.status);
      if (answer.status === 503) {
        expect(answer.body.code).toBe('storage_unavailable');
        expect(answer.headers.get('retry-after')).toBe('5');
      }
    }
    const slowAnswer = await slow;
    expect(slowAnswer.status, JSON.stringify(slowAnswer.body)).toBe(200);
    // The disk refused the app's own state (Ready, v2) while it was full.
    await expectSoon(
      async () => /write failed; retrying until it lands/.test(server.output().join('\n')),
      3_000,
    );

    await new Promise((resolve) => setTimeout(resolve, 1_500));
    disk.free();
    await expectSoon(async () => (await api(server, '/readyz')).status === 200);

    /** What the API shows and what serves agree with what each call was answered. */
    const check = async (): Promise<void> => {
      const slowRow = await waitForPhase(server.baseURL, KEY, 'slow', ['Ready'], 10_000);
      expect(slowRow.live_version).toBe(2);
      expect(await bodyOf(server, 'slow')).toMatch(/^slow-v2 /);
      const versions = await api(server, '/v1/apps/redeploy/versions');
      expect(JSON.stringify(versions.body)).not.toMatch(/"version":2/);
      expect(await bodyOf(server, 'redeploy')).toMatch(/^redeploy-v1 /);
      expect((await api(server, '/v1/apps/fresh')).status).toBe(404);
      const pause = await api(server, '/v1/apps/pause');
      expect(pause.body.phase).toBe(suspend.status === 503 ? 'Ready' : 'Suspended');
      expect((await api(server, '/v1/apps/gone')).status).toBe(remove.status === 503 ? 200 : 404);
      const audit = await api(server, '/v1/audit?limit=1000');
      const events = JSON.stringify(audit.body);
      if (suspend.status === 200) expect(events).toMatch(/"action":"suspend","target":"pause"/);
      if (remove.status === 204) expect(events).toMatch(/"action":"delete","target":"gone"/);
      expect(orphanBlobs()).toEqual([]);
    };
    await check();

    await server.stop('SIGTERM');
    server = await start();
    await check();
  }, 180_000);

  it('never answers 404 for an existing app across a restart', async () => {
    let server = running.at(-1) as ServerProcess;
    const answers: number[] = [];
    let looping = true;
    const loop = (async () => {
      while (looping) {
        const res = await fetchApp(`http://redeploy.localhost:${port}/`).catch(() => undefined);
        if (res) answers.push(res.status);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    await server.stop('SIGTERM');
    server = await start();
    await expectSoon(async () => (await bodyOf(server, 'redeploy')).startsWith('redeploy-v1'));
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    looping = false;
    await loop;
    expect(answers.length).toBeGreaterThan(10);
    expect(answers.filter((status) => status === 404)).toEqual([]);
    expect(answers.every((status) => status === 200 || status === 503)).toBe(true);
  }, 120_000);
});

describe('a read-only source store', () => {
  it('refuses deploys with 503 storage_unavailable naming it, then takes them again', async () => {
    const server = running.at(-1) as ServerProcess;
    const sources = join(dataDir, 'sources');
    // A read-only bind over the folder: the database beside it stays writable.
    execFileSync('mount', ['--bind', sources, sources]);
    try {
      execFileSync('mount', ['-o', 'remount,ro,bind', sources]);
      await expectSoon(async () => (await api(server, '/readyz')).status === 503, 3_000);
      const refused = await deploy(server.baseURL, KEY, { name: 'ro' }, await nodeApp('ro'));
      expect(refused.status).toBe(503);
      expect(refused.body).toMatchObject({
        code: 'storage_unavailable',
        message:
          'the source store cannot write: the file system is read-only; retry once it is writable again',
        details: { store: 'source store' },
      });
      expect((await api(server, '/v1/apps/ro')).status).toBe(404);
      // What needs only the database goes on; reading too.
      expect((await api(server, '/v1/apps/redeploy/suspend', 'POST')).status).toBe(200);
      expect((await api(server, '/v1/apps/redeploy')).body.phase).toBe('Suspended');
    } finally {
      execFileSync('umount', [sources]);
    }
    await expectSoon(async () => (await api(server, '/readyz')).status === 200);
    const taken = await deploy(server.baseURL, KEY, { name: 'ro' }, await nodeApp('ro'));
    expect(taken.status, JSON.stringify(taken.body)).toBe(200);
    expect(await bodyOf(server, 'ro')).toMatch(/^ro /);
    expect(await bodyOf(server, 'redeploy')).toMatch(/^redeploy-v1 /);
    expect(orphanBlobs()).toEqual([]);
  }, 60_000);
});

async function expectSoon(ok: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await ok().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('condition not met in time');
}
