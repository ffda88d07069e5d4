/**
 * `npm run stop`: with restart continuity on, a SIGTERM leaves the apps' sandboxes and the front
 * door serving; `npm run stop` ends the server, the sandboxes and the front door, and frees the
 * address (README, Restarts).
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { instanceId } from '../../src/runtime/local/runtime-dir.js';
import { nodeApp } from '../support/apps.js';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { freePort, startServerProcess, type ServerProcess } from '../support/server-process.js';

const KEY = 'stop-everything-admin-key-0123456789';
const ROOT = join(import.meta.dirname, '..', '..');
const root = mkdtempSync(join(tmpdir(), 'slipway-stop-'));
// Its own runtime dir: no other test's instance ever sweeps it.
chmodSync(root, 0o711);
const dataDir = join(root, 'data');
const runtimeDir = join(root, 'run');
const running: ServerProcess[] = [];

afterAll(async () => {
  for (const s of running) await s.stop('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A zombie (this container's pid 1 does not reap) has ended all the same.
  return !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
};

/** The pids of the sandboxes the runtime dir's records name. */
function sandboxPids(): number[] {
  const held = join(runtimeDir, instanceId(dataDir), 'held');
  return readdirSync(held)
    .map((id) => join(held, id, 'record.json'))
    .filter((file) => existsSync(file))
    .map((file) => (JSON.parse(readFileSync(file, 'utf8')) as { pid: number }).pid);
}

const accepts = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

function npmRunStop(configFile: string): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/stop-everything.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', SVC_CONFIG: configFile },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, out })));
}

describe('npm run stop', () => {
  it('ends the server, the sandboxes and the front door that a SIGTERM leaves running', async () => {
    const port = await freePort();
    const server = await startServerProcess({
      dataDir,
      port,
      config: {
        server: { restartContinuity: true },
        runtime: { dir: runtimeDir, poolSize: 1 },
      },
      env: { SVC_AUTH_API_KEY: KEY },
      readyTimeoutMs: 120_000,
    });
    running.push(server);
    const res = await deploy(server.baseURL, KEY, { name: 'kept' }, await nodeApp('kept'));
    expect([200, 202]).toContain(res.status);
    const app = await waitForPhase(server.baseURL, KEY, 'kept', ['Ready'], 120_000);
    const front = (
      JSON.parse(readFileSync(join(dataDir, 'front', 'front.json'), 'utf8')) as {
        pid: number;
      }
    ).pid;
    const sandboxes = sandboxPids();
    expect(sandboxes.length).toBeGreaterThan(0);

    const stopped = await npmRunStop(server.configFile);
    expect(stopped.code, stopped.out).toBe(0);
    expect(stopped.out).toContain(`stopped the server (pid ${server.child.pid})`);
    expect(stopped.out).toContain("stopped the apps' sandboxes and the front door");
    // It is no server for anyone to use: it makes no admin and hands out no key.
    expect(stopped.out).not.toContain('bootstrap admin');
    // The server drained and exited 0, as for any SIGTERM, saying what it left running.
    expect(await server.exited).toBe(0);
    expect(server.output().join('\n')).toContain(
      'the apps and the front door keep serving for the next start; `npm run stop` ends them',
    );
    expect(alive(front)).toBe(false);
    for (const pid of sandboxes) expect(alive(pid), `sandbox ${pid}`).toBe(false);
    expect(await accepts(port)).toBe(false);
    await expect(fetchApp(String(app.url))).rejects.toThrow();

    // Nothing left to stop: it says so the same way and exits 0; the next start serves the app.
    const again = await npmRunStop(server.configFile);
    expect(again.code, again.out).toBe(0);
    expect(again.out).not.toContain('stopped the server');
    expect(again.out).not.toContain('bootstrap admin');
    const next = await startServerProcess({
      dataDir,
      port,
      config: { server: { restartContinuity: false }, runtime: { dir: runtimeDir, poolSize: 0 } },
      env: { SVC_AUTH_API_KEY: KEY },
      readyTimeoutMs: 120_000,
    });
    running.push(next);
    await waitForPhase(next.baseURL, KEY, 'kept', ['Ready'], 120_000);
    expect((await fetchApp(String(app.url))).status).toBe(200);
    expect(await next.stop('SIGTERM')).toBe(0);
  }, 300_000);
});
