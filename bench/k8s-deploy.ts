/**
 * The `k8s-deploy` row: deploy → live on the test cluster (real kube-apiserver, agent-sandbox
 * controller, the test node running pod agents; sources in moto's S3), beside the same deploys
 * into the local runtime in this run. The local server runs in this process, the cluster and its
 * server in a child inside test/k8s/netns.sh (k8s-deploy-netns.ts); each deploy is a new app
 * until its URL answers 200 through the control plane. Needs `bash test/k8s/build.sh` (cached).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../src/config/load.js';
import { startSlipway, type Running } from '../src/start.js';
import { fetchApp } from '../test/support/deploy.js';
import { freePort } from '../test/k8s/cluster.js';
import { startSlipwayEnv } from '../test/k8s/slipway-env.js';
import { BENCH_KEY as KEY, deployTo } from './slipway.js';
import { percentile, round, sleep, stageMedians, withClientSide } from './stats.js';
import type { Measured } from './targets.js';

const NS = 'slipway';

/** Each deploy's time (ms) and its stages: the server's Server-Timing and the client's. */
export interface Deploys {
  times: number[];
  stages: Record<string, number>[];
}

export async function k8sDeployRow(source: Buffer, n: number): Promise<Measured> {
  execFileSync('bash', ['test/k8s/build.sh'], { stdio: 'inherit' });
  const local = await start({ runtime: { poolSize: 2 } });
  const { times: localMs } = await deploys(local, source, n, 'local');
  await local.close();
  const { times: k8sMs, stages } = inNetns(n);
  const p50 = percentile(k8sMs, 50) / percentile(localMs, 50);
  return {
    id: 'k8s-deploy p50',
    measured: `${round(percentile(k8sMs, 50), 1)} ms (p99 ${round(percentile(k8sMs, 99), 1)} ms) deploy → live on the test cluster`,
    baseline: `${round(percentile(localMs, 50), 1)} ms local runtime (p99 ${round(percentile(localMs, 99), 1)} ms)`,
    figures: { ratio: round(p50) },
    stages: stageMedians(stages),
  };
}

/** What k8s-deploy-netns.ts prints its deploys (JSON `Deploys`) after. */
export const TIMES_MARK = 'k8s-deploy times:';

/**
 * The cluster half runs in a network namespace of its own, as the k8s suites do
 * (test/k8s/netns.sh): the test node's pod addresses and every port live on its loopback and
 * never touch the host's.
 */
function inNetns(n: number): Deploys {
  const out = execFileSync(
    'bash',
    [
      'test/k8s/netns.sh',
      process.execPath,
      '--import',
      'tsx',
      'bench/k8s-deploy-netns.ts',
      String(n),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  const line = out.split('\n').find((l) => l.startsWith(TIMES_MARK));
  if (!line) throw new Error(`k8s-deploy: the namespaced run printed no times:\n${out}`);
  return JSON.parse(line.slice(TIMES_MARK.length)) as Deploys;
}

/** Deploy → live on the test cluster, `n` times into full pools; in test/k8s/netns.sh only. */
export async function k8sDeploys(source: Buffer, n: number): Promise<Deploys> {
  const env = await startSlipwayEnv(NS, 'bench-sources');
  const k8s = await start({
    ...env.config(),
    runtime: {
      backend: 'kubernetes',
      poolSize: 2,
      egress: { allowPrivate: ['127.0.0.1'] },
      kubernetes: { egress: { listen: `127.0.0.1:${await freePort()}`, address: '127.0.0.1' } },
    },
  });
  try {
    // Measured into full pools, as the local row is.
    type Ready = {
      components?: { runtime?: { pools?: Record<string, { idle: number; target: number }> } };
    };
    for (let i = 0; i < 600; i += 1) {
      const res = await fetch(`${k8s.baseURL}/readyz`, {
        headers: { authorization: `Bearer ${KEY}` },
      });
      const pools = ((await res.json()) as Ready).components?.runtime?.pools ?? {};
      const full = Object.values(pools).every((p) => p.idle >= p.target);
      if (res.status === 200 && Object.keys(pools).length > 0 && full) break;
      await sleep(100);
    }
    return await deploys(k8s, source, n, 'k8s');
  } finally {
    await k8s.close();
    await env.stop();
  }
}

async function start(raw: Record<string, unknown>): Promise<Running> {
  const config = parseConfig({
    ...raw,
    // Nothing outlives the row: with restart continuity its front door would serve on.
    server: {
      listen: '127.0.0.1:0',
      dataDir: mkdtempSync(join(tmpdir(), 'slipway-bench-')),
      restartContinuity: false,
    },
    auth: { apiKeys: [{ key: KEY, name: 'bench', role: 'admin' }] },
  });
  return startSlipway(config, { logger: false });
}

async function deploys(s: Running, source: Buffer, n: number, label: string): Promise<Deploys> {
  const times: number[] = [];
  const stages: Record<string, number>[] = [];
  for (let i = 0; i < n; i += 1) {
    const name = `${label}-deploy-${i}`;
    const started = performance.now();
    const res = await deployTo(s.baseURL, name, source);
    if (res.status !== 200) throw new Error(`${label}: deploy answered ${res.status}`);
    const answered = performance.now();
    const page = await fetchApp(String(res.body.url));
    if (page.status !== 200) throw new Error(`${label}: URL answered ${page.status}`);
    times.push(performance.now() - started);
    stages.push(withClientSide(res.stages, answered - started, performance.now() - answered));
    await fetch(`${s.baseURL}/v1/apps/${name}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${KEY}` },
    });
    // As the local row: not back to back, the pools get their refill.
    await sleep(300);
  }
  return { times, stages };
}
