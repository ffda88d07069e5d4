/**
 * The `start` row (design.md §8): `npm start`'s process on the default config (SQLite, served
 * sources, the local runtime) from spawn until `/readyz` answers 200, then its own resident memory
 * once idle (its sandboxes not counted); beside it, a bare fastify server answering `/readyz`,
 * started with plain node, measured the same way. Medians over interleaved runs.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, rssOf, stop } from './processes.js';
import { BENCH_KEY } from './slipway.js';
import { percentile, round, sleep } from './stats.js';
import type { Measured } from './targets.js';

const RUNS = Number(process.env.BENCH_START_RUNS ?? 5);
/** How long a started process is left alone before its memory is read. */
const SETTLE_MS = 2_000;

interface Started {
  ms: number;
  rssBytes: number;
}

export async function startRow(): Promise<Measured> {
  const ours: Started[] = [];
  const bare: Started[] = [];
  for (let i = 0; i < RUNS; i += 1) {
    bare.push(await timedStart([resolve('bench/fixtures/start-baseline.mjs')], {}));
    const dataDir = mkdtempSync(join(tmpdir(), 'slipway-bench-start-'));
    try {
      ours.push(
        await timedStart(['--import', 'tsx', 'src/main.ts'], {
          SVC_DATA_DIR: dataDir,
          SVC_AUTH_API_KEY: BENCH_KEY,
          SVC_LOG_LEVEL: 'warn',
        }),
      );
    } finally {
      // On the default config the front door outlives a SIGTERM (restart continuity).
      execFileSync(process.execPath, ['--import', 'tsx', 'src/stop-everything.ts'], {
        env: { PATH: process.env.PATH, SVC_DATA_DIR: dataDir, SVC_LOG_LEVEL: 'warn' },
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  const ms = percentile(
    ours.map((s) => s.ms),
    50,
  );
  const baseMs = percentile(
    bare.map((s) => s.ms),
    50,
  );
  const mb = (list: Started[]) =>
    percentile(
      list.map((s) => s.rssBytes / 2 ** 20),
      50,
    );
  return {
    id: 'start',
    measured: `${round(ms, 0)} ms to /readyz 200, ${round(mb(ours), 0)} MB idle RSS`,
    baseline: `${round(baseMs, 0)} ms, ${round(mb(bare), 0)} MB bare fastify`,
    figures: { ratio: round(ms / baseMs) },
  };
}

/** Spawns `node ARGS` on a free port, timed until GET /readyz answers 200; its RSS once idle. */
async function timedStart(args: string[], env: Record<string, string>): Promise<Started> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH, PORT: String(port), SVC_LISTEN: `127.0.0.1:${port}`, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    await readyz(port, child);
    const ms = performance.now() - started;
    await sleep(SETTLE_MS);
    return { ms, rssBytes: rssOf(child.pid ?? 0) };
  } finally {
    await stop(child);
  }
}

async function readyz(port: number, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`start: exited ${child.exitCode} before ready`);
    const status = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (res) => res.status,
      () => 0,
    );
    if (status === 200) return;
    await sleep(5);
  }
  throw new Error('start: /readyz did not answer 200 within 60 s');
}
