/**
 * Apps keep serving while the control plane restarts, crashes or is upgraded (design.md §10):
 * 20 clients loop over 10 Ready apps of every kind across a SIGTERM and start, a kill -9 and
 * start, and a start of another checkout's build on the same data dir. Not one request fails,
 * and every app is served by the very process that served it before (adopted, never restarted).
 */
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { instanceId } from '../../src/runtime/local/runtime-dir.js';
import { nodeApp } from '../support/apps.js';
import { deploy, waitForPhase } from '../support/deploy.js';
import { assertRegistryReachable, depApp, SERVER_BODY } from '../support/general-lane-apps.js';
import { freePort, startServerProcess, type ServerProcess } from '../support/server-process.js';
import { tarGz } from '../support/tarball.js';

const KEY = `continuity-admin-${randomBytes(16).toString('hex')}`;
const ROOT = join(import.meta.dirname, '..', '..');
const root = mkdtempSync(join(tmpdir(), 'slipway-continuity-'));
// Its own runtime dir: no other instance on this host (another test's) ever sweeps it.
chmodSync(root, 0o711);
const dataDir = join(root, 'data');
const runtimeDir = join(root, 'run');
const running: ServerProcess[] = [];
const config = (continuity: boolean) => ({
  server: { restartContinuity: continuity },
  runtime: { dir: runtimeDir, poolSize: 1 },
});

afterAll(async () => {
  for (const server of running) await server.stop('SIGKILL');
  // A last start without continuity takes every sandbox back, and its stop ends them all.
  const port = await freePort();
  const last = await startServerProcess({
    dataDir,
    port,
    config: config(false),
    env: { SVC_AUTH_API_KEY: KEY },
    readyTimeoutMs: 120_000,
  }).catch(() => undefined);
  await last?.stop('SIGTERM', 60_000);
  rmSync(root, { recursive: true, force: true });
});

const python = `
import http.server, os, uuid
boot = str(uuid.uuid4())
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ('py ' + boot + '\\n').encode()
        self.send_response(200)
        self.send_header('content-length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(('127.0.0.1', int(os.environ['PORT'])), Handler).serve_forever()
`;

/** The private app, entered with a share link's grant cookie. */
const PRIVATE = 'cont-private';

/** The apps, by name: every template, one that went through the general lane, one private. */
async function sources(): Promise<Record<string, Buffer>> {
  const out: Record<string, Buffer> = {};
  for (let i = 0; i < 5; i++) out[`cont-node-${i}`] = await nodeApp(`node-${i}`);
  out[PRIVATE] = await nodeApp('private');
  for (let i = 0; i < 2; i++) {
    out[`cont-static-${i}`] = await tarGz({ 'index.html': `<p>static ${i}</p>` });
  }
  if (existsSync('/usr/bin/python3')) out['cont-python'] = await tarGz({ 'main.py': python });
  out['cont-general'] = await tarGz(await depApp());
  return out;
}

/** The sandbox pid of each app, from the records the runtime keeps for the next start. */
function sandboxPids(): Record<string, number> {
  const held = join(runtimeDir, instanceId(dataDir), 'held');
  const out: Record<string, number> = {};
  for (const id of readdirSync(held)) {
    const file = join(held, id, 'record.json');
    if (!existsSync(file)) continue;
    const record = JSON.parse(readFileSync(file, 'utf8')) as { app?: string; pid: number };
    if (record.app) out[record.app] = record.pid;
  }
  return out;
}

/**
 * For a failure's message: what the front door and each control plane of the run logged at warn
 * and above, and their starts and stops, which say where in the restarts a request was lost.
 */
function whatTheyLogged(servers: ServerProcess[]): string {
  const front = join(dataDir, 'front', 'front.log');
  const frontLines = existsSync(front) ? readFileSync(front, 'utf8').trim().split('\n') : [];
  const telling =
    /"level":("warn"|"error"|"fatal"|40|50|60)|listening|shutting down|front door|drain|complete/;
  return [
    `front door: ${frontLines.slice(-30).join('\n')}`,
    ...servers.map(
      (server, n) =>
        `control plane ${n + 1}: ${server
          .output()
          .filter((line) => telling.test(line))
          .slice(-30)
          .join('\n')}`,
    ),
  ].join('\n\n');
}

/** One keep-alive client of its own, like a browser tab; `cookie` for the private app. */
function get(
  agent: Agent,
  port: number,
  host: string,
  cookie = '',
  path = '/',
): Promise<{ status: number; body: string; setCookie: string }> {
  return new Promise((resolve) => {
    const headers = { host, ...(cookie ? { cookie } : {}) };
    const req = request({ host: '127.0.0.1', port, path, agent, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      const setCookie = String(res.headers['set-cookie'] ?? '').split(';')[0] ?? '';
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, setCookie }));
      res.on('error', (err) => resolve({ status: 0, body: String(err), setCookie: '' }));
    });
    req.on('error', (err) => resolve({ status: 0, body: String(err), setCookie: '' }));
    req.end();
  });
}

describe('restart continuity (local runtime)', () => {
  it('serves every request across SIGTERM, kill -9 and an upgrade, on the same sandboxes', async () => {
    await assertRegistryReachable();
    const port = await freePort();
    const start = async (root = ROOT): Promise<ServerProcess> => {
      const server = await startServerProcess({
        dataDir,
        port,
        config: config(true),
        env: { SVC_AUTH_API_KEY: KEY },
        readyTimeoutMs: 120_000,
        root,
      });
      running.push(server);
      return server;
    };
    let server = await start();
    const apps = await sources();
    const names = Object.keys(apps);
    for (const name of names) {
      const metadata = name === PRIVATE ? { name, access: 'private' } : { name };
      const res = await deploy(server.baseURL, KEY, metadata, apps[name]);
      expect([200, 202], JSON.stringify(res.body)).toContain(res.status);
    }
    for (const name of names) await waitForPhase(server.baseURL, KEY, name, ['Ready'], 300_000);

    // A visitor of the private app comes in through a share link: its grant cookie.
    const agent = new Agent({ keepAlive: true });
    const link = await fetch(`${server.baseURL}/v1/apps/${PRIVATE}/share-links`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: '{}',
    });
    const { token } = (await link.json()) as { token: string };
    const opened = (await (await fetch(`${server.baseURL}/api/share/${token}`)).json()) as {
      grant_url: string;
    };
    const grantUrl = new URL(opened.grant_url);
    const granted = await get(
      agent,
      port,
      grantUrl.host,
      '',
      `${grantUrl.pathname}${grantUrl.search}`,
    );
    expect(granted.status).toBe(303);
    const cookieOf = (name: string): string => (name === PRIVATE ? granted.setCookie : '');
    expect(cookieOf(PRIVATE)).toMatch(/^slipway_access_cont-private=/);
    expect((await get(agent, port, `${PRIVATE}.localhost:${port}`)).status).toBe(401);

    // What each app answers now: the same body (a boot id for node and python) must come back.
    const expected: Record<string, string> = {};
    for (const name of names) {
      const first = await get(agent, port, `${name}.localhost:${port}`, cookieOf(name));
      expect(first.status, `${name}: ${first.body}`).toBe(200);
      expected[name] = first.body;
    }
    expect(expected['cont-general']).toBe(SERVER_BODY);
    const pids = sandboxPids();
    expect(Object.keys(pids).sort()).toEqual([...names].sort());

    // 20 clients, each with its own connections, round-robin over the apps until told to stop.
    const failed: string[] = [];
    // Which restart a failed request fell in, for the failure's message.
    let phase = 'before the restarts';
    let answered = 0;
    let looping = true;
    const waiters: { at: number; resolve: () => void }[] = [];
    const count = (): void => {
      answered += 1;
      for (const w of waiters.filter((w) => w.at <= answered)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    };
    const clients = Array.from({ length: 20 }, async (_, c) => {
      const own = new Agent({ keepAlive: true });
      for (let i = c; looping; i++) {
        const name = names[i % names.length] as string;
        const res = await get(own, port, `${name}.localhost:${port}`, cookieOf(name));
        count();
        if (res.status !== 200 || res.body !== expected[name]) {
          failed.push(
            `${phase}, ${new Date().toISOString()}: ${name}: ${res.status} ${res.body.slice(0, 120)}`,
          );
        }
      }
      own.destroy();
    });
    /** Resolves once the clients got `n` more answers: the data path serves again. */
    const answers = (n: number): Promise<void> =>
      new Promise((resolve) => waiters.push({ at: answered + n, resolve }));
    await answers(100);

    // A visitor who opened the link just before the restart comes in just after it, once.
    const reopened = (await (await fetch(`${server.baseURL}/api/share/${token}`)).json()) as {
      grant_url: string;
    };
    const pending = new URL(reopened.grant_url);

    // A clean stop and start. The visitor comes in as soon as the server is back: the code lives
    // a minute (codeTtlMs), and on a busy host the restart alone can take most of it.
    phase = 'SIGTERM and start';
    expect(await server.stop('SIGTERM')).toBe(0);
    server = await start();
    const visit = (url: URL) =>
      get(new Agent(), port, url.host, '', `${url.pathname}${url.search}`);
    const late = await visit(pending);
    expect(late.status).toBe(303);
    expect(late.setCookie).toMatch(/^slipway_access_cont-private=/);
    for (const spent of [pending, grantUrl]) {
      const again = await visit(spent);
      expect(again.status).not.toBe(303);
      expect(again.setCookie).toBe('');
    }
    await answers(200);
    // A crash and start.
    phase = 'kill -9 and start';
    server.child.kill('SIGKILL');
    await server.exited;
    server = await start();
    await answers(200);
    // An upgrade: another checkout's code on the same data dir.
    const newer = join(root, 'newer');
    const own = new Set(['node_modules', '.git', 'data']);
    for (const part of readdirSync(ROOT).filter((name) => !own.has(name))) {
      cpSync(join(ROOT, part), join(newer, part), { recursive: true });
    }
    symlinkSync(join(ROOT, 'node_modules'), join(newer, 'node_modules'));
    phase = 'upgrade';
    expect(await server.stop('SIGTERM')).toBe(0);
    server = await start(newer);
    await answers(200);

    looping = false;
    await Promise.all(clients);
    agent.destroy();
    expect(failed, failed.length > 0 ? whatTheyLogged(running) : '').toEqual([]);
    expect(answered).toBeGreaterThan(700);
    // Adopted, never restarted: the very processes that served before.
    expect(sandboxPids()).toEqual(pids);
    for (const name of names) {
      const view = await fetch(`${server.baseURL}/v1/apps/${name}`, {
        headers: { authorization: `Bearer ${KEY}` },
      });
      expect(((await view.json()) as { phase: string }).phase).toBe('Ready');
    }
  }, 900_000);
});
