import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { freePort, stop, waitForAccept } from './processes.js';
import { parseServerTiming } from '../src/stage-clock.js';
import { fetchApp } from '../test/support/deploy.js';
import { deployForm } from '../test/support/https-client.js';
import { sleep } from './stats.js';

export const BENCH_KEY = 'bench-key-0123456789abcdef0123456789';

/** A Slipway server in its own process (so the load generator does not share its event loop). */
export interface SlipwayProcess {
  base: string;
  port: number;
  dataDir: string;
  child: ChildProcess;
  /** The stages of each wake a visitor caused, from the server's `app woke` log lines. */
  wakes: Record<string, number>[];
  close(): Promise<void>;
}

/** pino's number for `warn`: lines from it up are passed on to our stderr. */
const WARN = 40;

/**
 * Starts Slipway; `at` restarts one on an existing data dir and port (the restart row). Apps stop
 * with the server unless `continuity` (the restart row), so no row leaves sandboxes behind.
 */
export async function startSlipwayProcess(
  poolSize: number,
  at?: { dataDir: string; port: number },
  continuity = false,
): Promise<SlipwayProcess> {
  const dataDir = at?.dataDir ?? mkdtempSync(join(tmpdir(), 'slipway-bench-'));
  const port = at?.port ?? (await freePort());
  const configPath = join(dataDir, 'bench.yaml');
  writeFileSync(
    configPath,
    `server:\n  restartContinuity: ${continuity}\nruntime:\n  poolSize: ${poolSize}\n`,
  );
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: {
      ...process.env,
      SVC_CONFIG: configPath,
      SVC_DATA_DIR: dataDir,
      SVC_LISTEN: `127.0.0.1:${port}`,
      SVC_AUTH_API_KEY: BENCH_KEY,
      // `info` for the `app woke` lines; only warnings and errors are shown.
      SVC_LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const wakes: Record<string, number>[] = [];
  readLogLines(child, (line) => {
    if (line.msg === 'app woke' && line.stages) wakes.push(line.stages);
  });
  await waitForAccept(port, 30_000);
  const base = `http://127.0.0.1:${port}`;
  // A restart is timed until its apps serve, not until its pools are full again.
  if (at) return { base, port, dataDir, child, wakes, close: () => stop(child) };
  // Deploys are measured into a warm pool: wait until every template's pool is full (the pools
  // are among the details only an admin is shown).
  for (let i = 0; i < 600; i += 1) {
    const res = await api(base, 'GET', '/readyz');
    if (res.status === 200 && poolsFull(await res.json())) break;
    await sleep(100);
  }
  return { base, port, dataDir, child, wakes, close: () => stop(child) };
}

interface LogLine {
  level?: number;
  msg?: string;
  stages?: Record<string, number>;
}

/** Hands each JSON log line of the server to `each`; shows warnings and errors on stderr. */
function readLogLines(child: ChildProcess, each: (line: LogLine) => void): void {
  createInterface({ input: child.stdout as Readable }).on('line', (text) => {
    let line: LogLine;
    try {
      line = JSON.parse(text) as LogLine;
    } catch (err) {
      // Not one of pino's lines (a stray print): shown as it came.
      process.stderr.write(`${text} (${(err as Error).name})\n`);
      return;
    }
    if ((line.level ?? 0) >= WARN) process.stderr.write(`${text}\n`);
    each(line);
  });
}

/** POSTs a deploy and resolves with the status, body and the stages of its Server-Timing. */
export async function deployTo(
  base: string,
  name: string,
  source: Buffer,
): Promise<{ status: number; body: Record<string, string>; stages: Record<string, number> }> {
  // The multipart body as curl -F and the CLI send it: undici's FormData costs the client ~1 ms.
  const form = deployForm({ name }, source);
  const res = await fetchApp(`${base}/v1/deploy`, {
    method: 'POST',
    headers: { authorization: `Bearer ${BENCH_KEY}`, 'content-type': form.type },
    body: form.body,
  });
  return {
    status: res.status,
    body: JSON.parse(res.body) as Record<string, string>,
    stages: parseServerTiming(serverTiming(res.headers)),
  };
}

/** The `Server-Timing` header of an answer read with fetchApp. */
export function serverTiming(
  headers: Record<string, string | string[] | undefined>,
): string | null {
  const value = headers['server-timing'];
  return typeof value === 'string' ? value : null;
}

export async function api(base: string, method: string, path: string): Promise<Response> {
  return fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${BENCH_KEY}` } });
}

function poolsFull(report: unknown): boolean {
  const pools = (report as { components?: { runtime?: { pools?: object } } }).components?.runtime
    ?.pools as Record<string, { idle: number; target: number }> | undefined;
  return pools !== undefined && Object.values(pools).every((p) => p.idle >= p.target);
}
