import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, stop, waitForAccept } from './processes.js';
import { sleep } from './stats.js';

export const BENCH_KEY = 'bench-key-0123456789abcdef0123456789';

/** A Slipway server in its own process (so the load generator does not share its event loop). */
export interface SlipwayProcess {
  base: string;
  port: number;
  dataDir: string;
  child: ChildProcess;
  close(): Promise<void>;
}

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
      SVC_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  await waitForAccept(port, 30_000);
  const base = `http://127.0.0.1:${port}`;
  // A restart is timed until its apps serve, not until its pools are full again.
  if (at) return { base, port, dataDir, child, close: () => stop(child) };
  // Deploys are measured into a warm pool: wait until every template's pool is full.
  for (let i = 0; i < 600; i += 1) {
    const res = await fetch(`${base}/readyz`);
    if (res.status === 200 && poolsFull(await res.json())) break;
    await sleep(100);
  }
  return { base, port, dataDir, child, close: () => stop(child) };
}

/** POSTs a deploy and resolves with the status and body. */
export async function deployTo(
  base: string,
  name: string,
  source: Buffer,
): Promise<{ status: number; body: Record<string, string> }> {
  const form = new FormData();
  form.set('metadata', JSON.stringify({ name }));
  form.set(
    'source',
    new Blob([new Uint8Array(source)], { type: 'application/gzip' }),
    'source.tar.gz',
  );
  const res = await fetch(`${base}/v1/deploy`, {
    method: 'POST',
    body: form,
    headers: { authorization: `Bearer ${BENCH_KEY}` },
  });
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

export async function api(base: string, method: string, path: string): Promise<Response> {
  return fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${BENCH_KEY}` } });
}

function poolsFull(report: unknown): boolean {
  const pools = (report as { components?: { runtime?: { pools?: object } } }).components?.runtime
    ?.pools as Record<string, { idle: number; target: number }> | undefined;
  return pools !== undefined && Object.values(pools).every((p) => p.idle >= p.target);
}
