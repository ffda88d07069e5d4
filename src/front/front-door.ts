import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, openSync, closeSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server as HttpServer } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import net from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleEntry } from '../bundle.js';
import type { TlsMaterial } from '../http/tls.js';
import { alive, processTree, signal, startTime } from '../runtime/local/process-tree.js';
import { gone, processRef, runs } from '../runtime/local/teardown.js';
import { FRONT_PROTOCOL, type FrontSettings } from './front-settings.js';
import { acceptRelayed } from './relayed-connections.js';
import {
  CLOSE_MARK,
  haproxyPaths,
  type HaproxyPaths,
  type HaproxySettings,
} from './haproxy/haproxy-config.js';
import { listenForStragglers } from './haproxy/hold-listener.js';
import { reloadHaproxy, startHaproxy } from './haproxy/haproxy-process.js';
import type { Log } from '../logging.js';

/** The control plane's end of the front door (front-main.ts). */
export interface FrontDoor {
  /** The port visitors reach: the front door's. */
  port: number;
  /** Stops taking connections: the front door holds new visitors for the next control plane. */
  stopAccepting(): Promise<void>;
  /**
   * The response header that makes the front door end the visitor's connection after an answer
   * (haproxy-config.ts); absent where the answer's own `Connection: close` does (the relay).
   */
  closeMark?: string;
  /**
   * A start that failed undoes itself: a front door it launched stops (one it took over stays,
   * holding visitors for the next start).
   */
  abandon(): Promise<void>;
}

export interface FrontDoorOptions {
  dataDir: string;
  host: string;
  port: number;
  /** The control plane's server: relayed connections are handed to it. */
  server: HttpServer | HttpsServer;
  /** The native front door (HAProxy) instead of the relay process, when the data path is native. */
  native?: {
    haproxy: string;
    slots: number;
    threads: number;
    headersTimeoutMs: number;
    tls?: TlsMaterial;
    /** Write each direct request's access line (the log level is debug). */
    accessLog?: boolean;
  };
  log: Log;
}

/** What the state file says of the front door that runs. */
interface FrontState {
  /** Absent in the files of releases that had only the relay. */
  kind?: 'relay' | 'haproxy';
  /** HAProxy's settings it runs with (haproxySettings, as JSON): another set means a reload. */
  settings?: string;
  pid: number;
  started: string;
  v: number;
  host: string;
  port: number;
}

/** How long visitors wait for a control plane, and may stay idle with none behind them. */
const HOLD_MS = 60_000;
const IDLE_MS = 10_000;
const START_TIMEOUT_MS = 15_000;
const ENTRY = fileURLToPath(new URL('./front-main.ts', import.meta.url));

/**
 * Listens on the control plane's unix socket under `<dataDir>/front`, then takes the running
 * front door over (same protocol and address) or starts one: its own process, in its own
 * session, so that it outlives this one.
 */
export async function openFrontDoor(opts: FrontDoorOptions): Promise<FrontDoor> {
  const dir = frontDir(opts.dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const socket = join(dir, 'cp.sock');
  rmSync(socket, { force: true });
  const listener = net.createServer((conn) => acceptRelayed(conn, opts.server));
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(socket, () => resolve());
  });
  const running = readState(dir);
  const kind = opts.native ? 'haproxy' : 'relay';
  const paths = haproxyPaths(dir);
  const native = opts.native && {
    binary: opts.native.haproxy,
    paths,
    settings: {
      host: opts.host,
      port: opts.port,
      slots: opts.native.slots,
      threads: opts.native.threads,
      headersTimeoutMs: opts.native.headersTimeoutMs,
      node: process.execPath,
      ...(opts.native.tls ? { tls: writeTlsPem(paths.tls, opts.native.tls) } : {}),
      ...(opts.native.accessLog ? { accessLog: true } : {}),
    },
  };
  // Requests a freed slot of the native front door still gets (haproxy-routes.ts).
  const stragglers =
    native &&
    (await listenForStragglers(native.paths.hold, opts.server, {
      encrypted: native.settings.tls !== undefined,
    }));
  let port: number;
  let launched = false;
  if (running && fits(running, opts, kind)) {
    port = running.port;
    opts.log('info', 'front door taken over', { pid: running.pid, port, kind });
    const settings = native && JSON.stringify({ ...native.settings, port });
    if (native && settings !== running.settings) {
      await reloadHaproxy(native.paths, { ...native.settings, port });
      writeState(dir, { ...running, settings });
      opts.log('info', 'front door reloaded with new settings', { pid: running.pid });
    }
  } else {
    if (running) await stopProcess(running, opts.log);
    launched = true;
    const relay = { v: FRONT_PROTOCOL, host: opts.host, port: opts.port, socket };
    const holding = { ...relay, holdMs: HOLD_MS, idleMs: IDLE_MS };
    const started = native
      ? await startNative(native, { ...holding, listenPath: native.paths.relay })
      : await startFront(dir, holding);
    port = started.port;
    writeState(dir, {
      kind,
      ...(native ? { settings: JSON.stringify({ ...native.settings, port }) } : {}),
      pid: started.pid,
      started: startTime(started.pid),
      v: FRONT_PROTOCOL,
      host: opts.host,
      port,
    });
    opts.log('info', 'front door started', { pid: started.pid, port, kind });
  }
  const stopAccepting = (): Promise<void> => {
    // Only new connections stop: those accepted already are the server's, whose drain answers
    // and ends them (waiting here for them to close would hold the drain until they idle out).
    stragglers?.close();
    listener.close();
    return Promise.resolve();
  };
  return {
    port,
    stopAccepting,
    ...(native ? { closeMark: CLOSE_MARK } : {}),
    async abandon() {
      await stopAccepting();
      if (launched) await stopFrontDoor(opts.dataDir, opts.log);
    },
  };
}

/** A front door left by an earlier run with restartContinuity on: stopped, it frees the address. */
export async function stopFrontDoor(dataDir: string, log: FrontDoorOptions['log']): Promise<void> {
  const running = readState(frontDir(dataDir));
  if (running) await stopProcess(running, log);
}

function frontDir(dataDir: string): string {
  return join(dataDir, 'front');
}

function fits(state: FrontState, opts: FrontDoorOptions, kind: FrontState['kind']): boolean {
  return (
    (state.kind ?? 'relay') === kind &&
    state.v === FRONT_PROTOCOL &&
    state.host === opts.host &&
    (opts.port === 0 || state.port === opts.port)
  );
}

/** The state file's front door, if that very process (pid and start time) still runs. */
function readState(dir: string): FrontState | undefined {
  let state: FrontState;
  try {
    state = JSON.parse(readFileSync(join(dir, 'front.json'), 'utf8')) as FrontState;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || err instanceof SyntaxError) {
      return undefined;
    }
    throw err;
  }
  return Number.isInteger(state.pid) && startTime(state.pid) === state.started ? state : undefined;
}

/** HAProxy, with the relay its master runs beside the worker (haproxy-config.ts). */
async function startNative(
  native: { binary: string; paths: HaproxyPaths; settings: HaproxySettings },
  relay: FrontSettings,
): Promise<{ pid: number; port: number }> {
  await bundleEntry(ENTRY, native.paths.relayBundle);
  const env = { SLIPWAY_FRONT: JSON.stringify(relay) };
  return startHaproxy(native.binary, native.paths, native.settings, env);
}

async function startFront(
  dir: string,
  settings: FrontSettings,
): Promise<{ pid: number; port: number }> {
  const bundle = join(dir, 'front.mjs');
  await bundleEntry(ENTRY, bundle);
  const logFd = openSync(join(dir, 'front.log'), 'a', 0o600);
  const child = spawn(process.execPath, [bundle], {
    detached: true,
    cwd: '/',
    stdio: ['ignore', 'pipe', logFd],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', SLIPWAY_FRONT: JSON.stringify(settings) },
  });
  closeSync(logFd);
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the front door did not listen within ${START_TIMEOUT_MS} ms`)),
      START_TIMEOUT_MS,
    );
    let said = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      said += chunk.toString();
      const port = /^listening (\d+)\n/.exec(said)?.[1];
      if (port === undefined) return;
      clearTimeout(timer);
      resolve(Number(port));
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      const tail = readFileSync(join(dir, 'front.log'), 'utf8').trim().split('\n').slice(-3);
      reject(new Error(`the front door exited (${code}): ${tail.join(' | ')}`));
    });
  });
  child.stdout?.destroy();
  child.removeAllListeners('exit');
  child.unref();
  return { pid: child.pid ?? 0, port };
}

/**
 * The certificate and key in the one file HAProxy reads (owner-only, like the key itself); its
 * digest goes into the settings, so that a renewed certificate reloads the proxy.
 */
function writeTlsPem(path: string, tls: TlsMaterial): { sha256: string } {
  const pem = `${tls.cert.trim()}\n${tls.key.trim()}\n`;
  rmSync(path, { force: true });
  writeFileSync(path, pem, { mode: 0o600 });
  return { sha256: createHash('sha256').update(pem).digest('hex') };
}

function writeState(dir: string, state: FrontState): void {
  writeFileSync(join(dir, 'front.json'), JSON.stringify(state), { mode: 0o600 });
}

async function stopProcess(state: FrontState, log: FrontDoorOptions['log']): Promise<void> {
  log('info', 'stopping the front door', { pid: state.pid, port: state.port });
  // Its whole session, known before the master can end: HAProxy's worker and the relay beside it
  // are the master's children, and a master killed alone leaves them holding the address.
  const members = processTree(state.pid).map((p) => processRef(p.pid));
  const master = { pid: state.pid, started: state.started };
  signal(state.pid, 'SIGTERM');
  const deadline = Date.now() + 5_000;
  while (runs(master) && Date.now() <= deadline) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  // While one of them lives, the group keeps the master's pid from being reused; with none left,
  // a process that took the pid since may lead a group that is not ours.
  if (!alive(state.pid) || startTime(state.pid) === state.started) signal(-state.pid, 'SIGKILL');
  // Killed is not yet ended: a start may follow at once, and nothing of this one may linger.
  if (!(await gone(members))) {
    const pids = members.filter(runs).map((ref) => ref.pid);
    log('warn', 'the front door still runs after SIGKILL', { pids });
  }
}
