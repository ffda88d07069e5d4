/**
 * 100 apps on a host kept busy by CPU hogs, the control plane killed (-9) and started again: all
 * 100 serve again, each its own content, without a redeploy, and none ends Failed (issue 23,
 * item 4). Once with restart continuity off, so every app is started again through the bounded
 * queue (runtime.restoreConcurrency), most recently used first; once with it on, so every app is
 * adopted on the very sandbox that served it before.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { instanceId } from '../../src/runtime/local/runtime-dir.js';
import { nodeApp } from '../support/apps.js';
import { deploy, waitForPhase } from '../support/deploy.js';
import { freePort, startServerProcess, type ServerProcess } from '../support/server-process.js';
import { tarGz } from '../support/tarball.js';

const KEY = `many-admin-${randomBytes(16).toString('hex')}`;
const APPS = 100;
/** Every fourth app is a node app (a boot id in its answer); the rest are static sites. */
const isNode = (i: number): boolean => i % 4 === 0;
const NAMES = Array.from({ length: APPS }, (_, i) => `many-${i}`);
const HOGS = 2;
/** runtime.restoreConcurrency's default: cold starts a restart may have under way at once. */
const RESTORE_CONCURRENCY = 4;
/** The order visitors last came in before the kill (a permutation: 37 and 100 are coprime). */
const VISITS = NAMES.map((_, i) => NAMES[(i * 37) % APPS] as string);
/** Most recently used first: the order a restart owes them their cold starts. */
const RECENT_FIRST = [...VISITS].reverse();
/** What the whole of one restart may take, from start to all 100 serving, on a busy 2-core box. */
const RESTART_BUDGET_MS = 600_000;

const root = mkdtempSync(join(tmpdir(), 'slipway-many-'));
// Its own runtime dir: no other instance on this host (another test's) ever sweeps it.
chmodSync(root, 0o711);
const dataDir = join(root, 'data');
const runtimeDir = join(root, 'run');
const running: ServerProcess[] = [];
const hogs: ChildProcess[] = [];
let port = 0;
let server: ServerProcess;

const start = async (continuity: boolean): Promise<ServerProcess> => {
  const started = await startServerProcess({
    dataDir,
    port,
    config: {
      server: { restartContinuity: continuity },
      runtime: { dir: runtimeDir, poolSize: 1 },
    },
    env: { SVC_AUTH_API_KEY: KEY },
    readyTimeoutMs: 300_000,
  });
  running.push(started);
  return started;
};

afterAll(async () => {
  for (const hog of hogs) hog.kill('SIGKILL');
  for (const s of running) await s.stop('SIGKILL');
  // A last start without continuity takes every sandbox back, and its stop ends them all.
  const last = await startServerProcess({
    dataDir,
    port: await freePort(),
    config: { server: { restartContinuity: false }, runtime: { dir: runtimeDir, poolSize: 0 } },
    env: { SVC_AUTH_API_KEY: KEY },
    readyTimeoutMs: 300_000,
  }).catch(() => undefined);
  await last?.stop('SIGTERM', 120_000);
  rmSync(root, { recursive: true, force: true });
}, 600_000);

/** Busy loops on every core the box has (2): the loaded host the restart must not stampede. */
function startHogs(): void {
  while (hogs.length < HOGS) {
    hogs.push(spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
  }
}

async function api<T>(path: string): Promise<T> {
  const res = await fetch(`${server.baseURL}${path}`, {
    headers: { authorization: `Bearer ${KEY}` },
  });
  expect(res.status, path).toBe(200);
  return (await res.json()) as T;
}

interface AppView {
  app_id: string;
  phase: string;
  reason: string;
  last_deployed_at: string;
}

async function apps(): Promise<AppView[]> {
  return (await api<{ items: AppView[] }>('/v1/apps')).items.filter((a) =>
    NAMES.includes(a.app_id),
  );
}

function get(agent: Agent, name: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const headers = { host: `${name}.localhost:${port}` };
    const req = request({ host: '127.0.0.1', port, path: '/', agent, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', (err) => resolve({ status: 0, body: String(err) }));
    });
    req.setTimeout(120_000, () => req.destroy(new Error('no answer within 120 s')));
    req.on('error', (err) => resolve({ status: 0, body: String(err) }));
    req.end();
  });
}

/**
 * Every app asked at once (32 connections), as its visitors would, and asked again until it answers 200 with what
 * `ok` accepts. Returns the answers and how long it took; any answer but 200 and a 503 to retry
 * (an app on its way back) is a failure.
 */
async function allServe(
  ok: (name: string, body: string) => boolean,
): Promise<{ bodies: Record<string, string>; ms: number; wrong: string[] }> {
  const began = Date.now();
  // Half of server.maxPendingConnectionsPerAddress: all these visitors share one address.
  const agent = new Agent({ keepAlive: true, maxSockets: 32 });
  const bodies: Record<string, string> = {};
  const wrong: string[] = [];
  let waiting = [...NAMES];
  try {
    while (waiting.length > 0) {
      if (Date.now() - began > RESTART_BUDGET_MS) {
        throw new Error(`not serving after ${RESTART_BUDGET_MS} ms: ${waiting.join(' ')}`);
      }
      const answers = await Promise.all(waiting.map((name) => get(agent, name)));
      waiting = waiting.filter((name, i) => {
        const { status, body } = answers[i] as { status: number; body: string };
        if (status === 200 && ok(name, body)) {
          bodies[name] = body;
          return false;
        }
        if (status !== 503) wrong.push(`${name}: ${status} ${body.slice(0, 120)}`);
        return true;
      });
      // A poll: the 503s said to retry in a moment.
      if (waiting.length > 0) await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } finally {
    agent.destroy();
  }
  return { bodies, ms: Date.now() - began, wrong };
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

/** The apps by their stored last use, most recent first (what the next start reads). */
function storedRecentFirst(): string[] {
  const db = new Database(join(dataDir, 'slipway.db'), { readonly: true, fileMustExist: true });
  try {
    const text = db.prepare("SELECT value FROM meta WHERE key = 'app_last_use'").pluck().get();
    const times = JSON.parse(typeof text === 'string' ? text : '{}') as Record<string, number>;
    return NAMES.filter((name) => name in times).sort((a, b) => (times[b] ?? 0) - (times[a] ?? 0));
  } finally {
    db.close();
  }
}

/**
 * Watches the apps' phases, without a request to any of them (a request would move its app to
 * the front), until every one is Ready: when each was first seen Ready, and the most seen
 * Starting at once.
 */
async function watchRestore(): Promise<{
  readyAt: Map<string, number>;
  mostStarting: number;
  ms: number;
}> {
  const readyAt = new Map<string, number>();
  let mostStarting = 0;
  const began = Date.now();
  for (let poll = 0; readyAt.size < APPS; poll++) {
    if (Date.now() - began > RESTART_BUDGET_MS) {
      throw new Error(`not Ready after ${RESTART_BUDGET_MS} ms: ${APPS - readyAt.size} apps`);
    }
    const views = await apps();
    const failed = views.filter((a) => a.phase === 'Failed');
    expect(failed.map((a) => `${a.app_id}: ${a.reason}`)).toEqual([]);
    mostStarting = Math.max(mostStarting, views.filter((a) => a.phase === 'Starting').length);
    for (const a of views) {
      if (a.phase === 'Ready' && !readyAt.has(a.app_id)) readyAt.set(a.app_id, poll);
    }
    // A poll of the API, not of the apps: their visitors come once they are all back.
    if (readyAt.size < APPS) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { readyAt, mostStarting, ms: Date.now() - began };
}

/** The label a node app answers before its boot id; a static app's whole page. */
const ownContent = (name: string, body: string): boolean =>
  isNode(NAMES.indexOf(name)) ? body.startsWith(`${name} `) : body === `<p>${name}</p>`;

let before: { deployed: Record<string, string>; bodies: Record<string, string> };

/** Every app Ready, none Failed, none deployed again since the first deploy. */
async function expectAllReadyAsDeployed(): Promise<void> {
  const views = await apps();
  expect(views).toHaveLength(APPS);
  expect(views.filter((a) => a.phase !== 'Ready').map((a) => `${a.app_id}: ${a.phase}`)).toEqual(
    [],
  );
  for (const a of views) expect(a.last_deployed_at).toBe(before.deployed[a.app_id]);
}

beforeAll(async () => {
  port = await freePort();
  server = await start(false);
  const sources = await Promise.all(
    NAMES.map((name, i) => (isNode(i) ? nodeApp(name) : tarGz({ 'index.html': `<p>${name}</p>` }))),
  );
  // A few deploys at a time, as owners would, rather than 100 uploads at once.
  const queue = NAMES.map((name, i) => ({ name, source: sources[i] as Buffer }));
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const res = await deploy(server.baseURL, KEY, { name: next.name }, next.source);
        expect([200, 202], `${next.name}: ${JSON.stringify(res.body)}`).toContain(res.status);
      }
    }),
  );
  for (const name of NAMES) await waitForPhase(server.baseURL, KEY, name, ['Ready'], 300_000);
  const served = await allServe(ownContent);
  expect(served.wrong).toEqual([]);
  const deployed = Object.fromEntries((await apps()).map((a) => [a.app_id, a.last_deployed_at]));
  before = { deployed, bodies: served.bodies };
  // Visitors come one app after another; the server stores when, every 30 s.
  const agent = new Agent({ keepAlive: true });
  for (const name of VISITS) {
    expect((await get(agent, name)).status, name).toBe(200);
    // Last use is stored to the millisecond: two visits within one would tie, and a tie has no
    // order to check. The next one goes once the clock has moved past this answer.
    const answered = Date.now();
    while (Date.now() <= answered) await new Promise((resolve) => setImmediate(resolve));
  }
  agent.destroy();
  const stored = Date.now() + 120_000;
  while (storedRecentFirst().join() !== RECENT_FIRST.join()) {
    if (Date.now() > stored) throw new Error(`last use not stored: ${storedRecentFirst().join()}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}, 1_200_000);

describe('100 apps, a CPU hog, kill -9 and start', () => {
  it('without restart continuity: every app is started again, through the bounded queue', async () => {
    startHogs();
    server.child.kill('SIGKILL');
    await server.exited;
    server = await start(false);
    const { readyAt, mostStarting, ms } = await watchRestore();
    console.log(`cold restart of ${APPS} apps under load: all Ready after ${ms} ms`);
    // Never more than the bound at once, and in order of recent traffic: the ten most recently
    // used were all back before any of the ten least recently used was.
    expect(mostStarting).toBeLessThanOrEqual(RESTORE_CONCURRENCY);
    const lastOfFirst = Math.max(...RECENT_FIRST.slice(0, 10).map((n) => readyAt.get(n) ?? 0));
    const firstOfLast = Math.min(...RECENT_FIRST.slice(-10).map((n) => readyAt.get(n) ?? 0));
    expect(lastOfFirst).toBeLessThan(firstOfLast);
    const back = await allServe(ownContent);
    expect(back.wrong).toEqual([]);
    // Started again, not survivors: each node app answers with a new boot id.
    for (const name of NAMES.filter((_, i) => isNode(i))) {
      expect(back.bodies[name], name).not.toBe(before.bodies[name]);
    }
    await expectAllReadyAsDeployed();
  }, 1_200_000);

  it('with restart continuity: every app is adopted on the sandbox that served it', async () => {
    startHogs();
    // Everything stops with a server without continuity; the next one runs apps that outlive it.
    expect(await server.stop('SIGTERM', 120_000)).toBe(0);
    server = await start(true);
    const fresh = await allServe(ownContent);
    expect(fresh.wrong).toEqual([]);
    const pids = sandboxPids();
    expect(Object.keys(pids).sort()).toEqual([...NAMES].sort());
    server.child.kill('SIGKILL');
    await server.exited;
    server = await start(true);
    // The very same processes: a node app's boot id is the one it had before the kill.
    const back = await allServe(ownContent);
    console.log(`restart of ${APPS} adopted apps under load: all serving after ${back.ms} ms`);
    expect(back.wrong).toEqual([]);
    expect(back.bodies).toEqual(fresh.bodies);
    expect(sandboxPids()).toEqual(pids);
    await expectAllReadyAsDeployed();
  }, 1_200_000);
});
