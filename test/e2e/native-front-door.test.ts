/**
 * The native data path (design.md §10): HAProxy takes visitors of Ready public apps straight to
 * the app's socket; the control plane is only the activator. Against the real server process:
 * a public app answers while the control plane is frozen, a dead app costs no failed GET, and a
 * blue/green switch, a rollback and a suspend/wake cost no failed request from 20 clients.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haproxyCommand } from '../../src/front/haproxy/haproxy-cli.js';
import { proxyThreads } from '../../src/front/listen.js';
import { nodeApp } from '../support/apps.js';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { requestLoop } from '../support/request-loop.js';
import { freePort, startServerProcess, type ServerProcess } from '../support/server-process.js';
import { tarGz } from '../support/tarball.js';

const KEY = `native-admin-${randomBytes(16).toString('hex')}`;
const root = mkdtempSync(join(tmpdir(), 'slipway-native-'));
// The sandbox users reach the runtime dir under it.
chmodSync(root, 0o711);
let server: ServerProcess;
const auth = { authorization: `Bearer ${KEY}` };
const appUrl = (name: string, path = '/'): string =>
  `http://${name}.localhost:${server.port}${path}`;

beforeAll(async () => {
  server = await startServerProcess({
    dataDir: join(root, 'data'),
    port: await freePort(),
    config: { server: { dataPath: 'native' }, runtime: { dir: join(root, 'run') } },
    env: { SVC_AUTH_API_KEY: KEY },
    readyTimeoutMs: 120_000,
  });
}, 180_000);

afterAll(async () => {
  const started = server as ServerProcess | undefined;
  started?.child.kill('SIGCONT');
  await started?.stop('SIGTERM', 60_000);
  rmSync(root, { recursive: true, force: true });
}, 120_000);

async function deployReady(name: string, source: Buffer, extra: object = {}): Promise<void> {
  const res = await deploy(server.baseURL, KEY, { name, ...extra }, source);
  expect([200, 202], JSON.stringify(res.body)).toContain(res.status);
  await waitForPhase(server.baseURL, KEY, name, ['Ready'], 60_000);
}

/** A node app answering `<label> <boot id>`; `POST /die` kills its process outright. */
const mortalApp = (label: string): Promise<Buffer> =>
  tarGz({
    'package.json': JSON.stringify({ name: 'mortal', main: 'server.js' }),
    'server.js': `
const boot = require('node:crypto').randomUUID();
require('node:http').createServer((req, res) => {
  if (req.method === 'POST' && req.url === '/die') process.kill(process.pid, 'SIGKILL');
  res.end('${label} ' + boot + '\\n');
}).listen(process.env.PORT);
`,
  });

describe('the native front door', () => {
  it('says it is the data path, to admins', async () => {
    const res = await fetch(`${server.baseURL}/readyz`, { headers: auth });
    const body = (await res.json()) as { components: Record<string, Record<string, unknown>> };
    expect(body.components.dataPath).toEqual({ ok: true, kind: 'native', proxy: 'haproxy' });
  });

  it('runs HAProxy with half the cores as threads unless told a number', async () => {
    const info = async (): Promise<string> =>
      haproxyCommand(join(root, 'data', 'front', 'admin.sock'), 'show info');
    const threads = (text: string): number => Number(/^Nbthread: (\d+)$/m.exec(text)?.[1]);
    expect(threads(await info())).toBe(proxyThreads('auto'));
    const auto = [1, 2, 3, 8].map((cores) => proxyThreads('auto', cores));
    expect(auto).toEqual([1, 1, 1, 4]);
    expect(proxyThreads(3, 2)).toBe(3);
  });

  it('serves a Ready public app while the control plane is frozen, and holds the rest', async () => {
    await deployReady('nf-public', await nodeApp('public'));
    await deployReady('nf-private', await nodeApp('private'), { access: 'private' });
    const before = await fetchApp(appUrl('nf-public'));
    expect(before.status).toBe(200);
    const headers = (await fetchApp(appUrl('nf-public', '/log?msg=x'))).status;
    expect(headers).toBe(200);

    server.child.kill('SIGSTOP');
    try {
      // The API and a private app need the control plane: held, not refused.
      let apiSettled = false;
      const api = fetch(`${server.baseURL}/v1/apps/nf-public`, { headers: auth }).then((res) => {
        apiSettled = true;
        return res.status;
      });
      const during = await fetchApp(appUrl('nf-public'));
      expect(during).toMatchObject({ status: 200, body: before.body });
      expect(apiSettled, 'the frozen control plane answered').toBe(false);
      server.child.kill('SIGCONT');
      expect(await api).toBe(200);
    } finally {
      server.child.kill('SIGCONT');
    }
    // A private app is still the control plane's to admit.
    expect((await fetchApp(appUrl('nf-private'))).status).toBe(401);
  });

  it('tells the app who asked, as the router does', async () => {
    await deployReady(
      'nf-echo',
      await tarGz({
        'package.json': JSON.stringify({ name: 'echo', main: 'server.js' }),
        'server.js': `require('node:http').createServer((req, res) => res.end(JSON.stringify(req.headers))).listen(process.env.PORT);`,
      }),
    );
    const res = await fetchApp(appUrl('nf-echo'), {
      headers: { 'x-forwarded-for': '203.0.113.9' },
    });
    const seen = JSON.parse(res.body) as Record<string, string>;
    expect(seen['x-forwarded-for']).toBe('203.0.113.9, 127.0.0.1');
    expect(seen['x-forwarded-host']).toBe(`nf-echo.localhost:${server.port}`);
    expect(seen['x-forwarded-proto']).toBe('http');
    // A Slipway key is never the app's to see: that request goes through the control plane.
    const keyed = await fetchApp(appUrl('nf-echo'), { headers: auth });
    expect(JSON.parse(keyed.body)).not.toHaveProperty('authorization');
  });

  it('costs no failed GET when the app process is killed', async () => {
    await deployReady('nf-mortal', await mortalApp('mortal'));
    const first = await fetchApp(appUrl('nf-mortal'));
    const loops = Array.from({ length: 4 }, () =>
      requestLoop(appUrl('nf-mortal'), (body) => body.startsWith('mortal '), 5),
    );
    await until(() => loops.every((l) => l.count() >= 5));
    await fetchApp(appUrl('nf-mortal', '/die'), { method: 'POST' }).catch(() => undefined);
    // Until the app is back (a new boot id), and a little more.
    await until(async () => (await fetchApp(appUrl('nf-mortal'))).body !== first.body);
    const marks = loops.map((l) => l.count());
    await until(() => loops.every((l, i) => l.count() >= (marks[i] ?? 0) + 5));
    const results = await Promise.all(loops.map((l) => l.stop()));
    expect(results.flatMap((r) => r.failed)).toEqual([]);
  });

  it('costs no failed request from 20 clients across a switch, a rollback and a suspend', async () => {
    await deployReady('nf-switch', await nodeApp('v1'));
    const ok = (body: string): boolean => /^v[12] /.test(body);
    const loops = Array.from({ length: 20 }, () => requestLoop(appUrl('nf-switch'), ok, 5));
    const after = async (step: () => Promise<void>): Promise<void> => {
      await step();
      const marks = loops.map((l) => l.count());
      await until(() => loops.every((l, i) => l.count() >= (marks[i] ?? 0) + 3));
    };
    await after(async () => {
      await deployReady('nf-switch', await nodeApp('v2'));
      await until(async () => (await fetchApp(appUrl('nf-switch'))).body.startsWith('v2 '));
    });
    await after(async () => {
      const res = await fetch(`${server.baseURL}/v1/apps/nf-switch/rollback`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ version: 1 }),
      });
      expect(res.status).toBe(200);
      await until(async () => (await fetchApp(appUrl('nf-switch'))).body.startsWith('v1 '));
    });
    await after(async () => {
      const res = await fetch(`${server.baseURL}/v1/apps/nf-switch/suspend`, {
        method: 'POST',
        headers: auth,
      });
      expect(res.status).toBe(200);
    });
    const results = await Promise.all(loops.map((l) => l.stop()));
    expect(results.flatMap((r) => r.failed)).toEqual([]);
    expect(results.reduce((n, r) => n + r.answers.length, 0)).toBeGreaterThan(100);
  });
});

/** Polls `done` until it holds (the test's own timeout bounds it). */
async function until(done: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await done())) await new Promise((resolve) => setTimeout(resolve, 20));
}
