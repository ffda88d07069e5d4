import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { delimiter, join } from 'node:path';
import { haproxyCommand } from './haproxy-cli.js';
import { haproxyConfig, type HaproxyPaths, type HaproxySettings } from './haproxy-config.js';

const START_TIMEOUT_MS = 15_000;
const POLL_MS = 25;

/** The haproxy binary: on PATH, or where Debian puts it (sbin is not on every user's PATH). */
export function findHaproxy(path = process.env.PATH ?? ''): string | undefined {
  const dirs = [...path.split(delimiter), '/usr/sbin', '/usr/local/sbin', '/sbin'];
  return dirs
    .filter((dir) => dir.startsWith('/'))
    .map((dir) => join(dir, 'haproxy'))
    .find((file) => existsSync(file));
}

/**
 * Writes the configuration and the route map, then starts HAProxy in master-worker mode, in a
 * session of its own (it outlives this process), logging to `front.log`; `env` is for the
 * programs its master runs. Resolves with the master's
 * pid once the runtime API answers, which it does only once the listener is bound.
 */
export async function startHaproxy(
  binary: string,
  paths: HaproxyPaths,
  settings: HaproxySettings,
  env: Record<string, string>,
): Promise<{ pid: number; port: number }> {
  const port = settings.port === 0 ? await freePort(settings.host) : settings.port;
  await writeLayout(paths, { ...settings, port });
  const logFd = openSync(join(paths.dir, 'front.log'), 'a', 0o600);
  const child = spawn(binary, ['-W', '-db', '-f', paths.config, '-S', `${paths.master},mode,600`], {
    detached: true,
    cwd: '/',
    stdio: ['ignore', logFd, logFd],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
  });
  closeSync(logFd);
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = `exited (${code ?? signal})`));
  child.once('error', (err) => (exited = err.message));
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!(await answers(paths.admin))) {
    if (exited !== undefined || Date.now() > deadline) {
      if (exited === undefined) child.kill('SIGKILL');
      const tail = readFileSync(join(paths.dir, 'front.log'), 'utf8').trim().split('\n').slice(-3);
      throw new Error(
        `the front door (haproxy) ${exited ?? `did not start within ${START_TIMEOUT_MS} ms`}: ${tail.join(' | ')}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  child.removeAllListeners('exit');
  child.unref();
  return { pid: child.pid ?? 0, port };
}

/**
 * A running HAProxy takes a new configuration: written, then reloaded by its master (the
 * listener stays bound, connections in flight finish on the old worker). Resolves once the new
 * worker answers.
 */
export async function reloadHaproxy(paths: HaproxyPaths, settings: HaproxySettings): Promise<void> {
  await writeFile(paths.config, haproxyConfig(settings, paths), { mode: 0o600 });
  const before = await haproxyCommand(paths.admin, 'show info').catch(() => '');
  await haproxyCommand(paths.master, 'reload');
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const now = await haproxyCommand(paths.admin, 'show info').catch(() => '');
    if (now !== '' && pidOf(now) !== pidOf(before)) return;
    if (Date.now() > deadline) throw new Error('the front door (haproxy) did not reload in time');
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/**
 * The configuration, an empty route map and no slot links: a new proxy routes nothing until the
 * control plane has checked each app (an earlier proxy's routes may name sandboxes long gone).
 */
async function writeLayout(paths: HaproxyPaths, settings: HaproxySettings): Promise<void> {
  await rm(paths.slots, { recursive: true, force: true });
  mkdirSync(paths.slots, { recursive: true, mode: 0o700 });
  await writeFile(paths.config, haproxyConfig(settings, paths), { mode: 0o600 });
  await writeFile(paths.map, '', { mode: 0o600 });
}

const pidOf = (info: string): string => /^Pid: (\d+)$/m.exec(info)?.[1] ?? '';

async function answers(socket: string): Promise<boolean> {
  return (await haproxyCommand(socket, 'show info', 1_000).catch(() => '')).includes('Pid:');
}

/** A port free now on `host`, for a listener asked to take any (tests). */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen({ host, port: 0 }, () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}
