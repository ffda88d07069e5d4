import { testDataPath } from './data-path.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { stringify } from 'yaml';

/**
 * The real control plane as `npm start` runs it: its own process, a YAML config file, a fixed port
 * (so a restart comes back at the same address), and its log lines kept for the test to read.
 * Fault tests kill it (-9), stop it (SIGTERM) and start it again on the same data dir.
 */
export interface ServerProcess {
  baseURL: string;
  port: number;
  child: ChildProcess;
  /** The config file it was started with (`SVC_CONFIG`): what `npm run stop` needs too. */
  configFile: string;
  /** Every line the process wrote to stdout and stderr so far. */
  output(): string[];
  /** Resolves with the exit code (or the signal's name) once the process has ended. */
  exited: Promise<number | string>;
  /** Sends a signal and waits for the exit; SIGKILL after `graceMs` if it is still running. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<number | string>;
}

const ROOT = join(import.meta.dirname, '..', '..');

/** A port that was free a moment ago (bound on 0, then released). */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  if (typeof address !== 'object' || !address) throw new Error('no port');
  return address.port;
}

/**
 * Starts `src/main.ts` with `config` (merged over a data dir and a loopback listener on `port`) and
 * waits until `/readyz` answers 200, or rejects with the process's output if it exits first.
 */
export async function startServerProcess(opts: {
  dataDir: string;
  port: number;
  config?: Record<string, unknown>;
  env?: Record<string, string>;
  readyTimeoutMs?: number;
  /** Resolve as soon as the process runs, without waiting for readiness. */
  noWait?: boolean;
  /** Another checkout of Slipway to run (an upgrade); default this one. */
  root?: string;
}): Promise<ServerProcess> {
  const { dataDir, port } = opts;
  const server = (opts.config?.server ?? {}) as Record<string, unknown>;
  const config = {
    ...opts.config,
    // Apps stop with the server unless a test asks for them to outlive it (and cleans them up).
    server: {
      logLevel: 'info',
      restartContinuity: false,
      dataPath: testDataPath(),
      ...server,
      listen: `127.0.0.1:${port}`,
      dataDir,
    },
  };
  const configFile = join(dataDir, '..', `slipway-${port}.yaml`);
  writeFileSync(configFile, stringify(config));
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: opts.root ?? ROOT,
    env: { ...hostEnv(), ...opts.env, SVC_CONFIG: configFile },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const collect = (chunk: Buffer): void => {
    lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  const baseURL = `http://127.0.0.1:${port}`;
  const proc: ServerProcess = {
    baseURL,
    port,
    child,
    configFile,
    output: () => [...lines],
    exited,
    async stop(signal = 'SIGTERM', graceMs = 60_000) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
  if (opts.noWait) return proc;
  const deadline = Date.now() + (opts.readyTimeoutMs ?? 60_000);
  let ended: number | string | undefined;
  void exited.then((code) => (ended = code));
  while (Date.now() < deadline) {
    if (ended !== undefined) {
      throw new Error(`server exited (${ended}) before ready:\n${lines.join('\n')}`);
    }
    const status = await fetch(`${baseURL}/readyz`).then(
      (res) => res.status,
      () => 0,
    );
    if (status === 200) return proc;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await proc.stop('SIGKILL');
  throw new Error(`server not ready within the timeout:\n${lines.join('\n')}`);
}

/**
 * What the server keeps of this process's environment: PATH, and npm's global config file when
 * one is named. npm looks for that file beside the Node that runs it, so on a Node installed
 * elsewhere (the LTS in CI: .ci/lts-vitest.sh) the server's npm would find none, lose the host's
 * registry CA, and the general lane's installs would fail TLS.
 */
function hostEnv(): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
  const npmrc = process.env.npm_config_globalconfig;
  if (npmrc) env.npm_config_globalconfig = npmrc;
  return env;
}
