/**
 * The `k8s-deploy` row: deploy → live on the test cluster (real kube-apiserver, agent-sandbox
 * controller, the test node running pod agents; sources in moto's S3), beside the same deploys
 * into the local runtime in this run. Both servers run in this process; each deploy is a new app
 * until its URL answers 200 through the control plane. Needs `bash test/k8s/build.sh` (cached).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../src/config/load.js';
import { startSlipway, type Running } from '../src/start.js';
import { deploy, fetchApp } from '../test/support/deploy.js';
import { startMoto } from '../test/support/moto.js';
import { freePort, startCluster, startTestNode } from '../test/k8s/cluster.js';
import { bundlePodAgent, podAgentCommand } from '../test/k8s/pod-agent.js';
import { percentile, round, sleep } from './stats.js';

const KEY = 'bench-k8s-key-0123456789abcdef0123';
const NS = 'slipway';

export async function k8sDeployRow(source: Buffer, n: number) {
  execFileSync('bash', ['test/k8s/build.sh'], { stdio: 'inherit' });
  const local = await start({ runtime: { poolSize: 2 } });
  const localMs = await deploys(local, source, n, 'local');
  await local.close();

  const moto = await startMoto();
  const cluster = await startCluster();
  const node = await startTestNode({
    cluster,
    namespace: NS,
    agentCommand: podAgentCommand(await bundlePodAgent()),
  });
  await cluster.api.must('POST', '/api/v1/namespaces', { metadata: { name: NS } });
  await moto.createBucket('bench-sources');
  const k8s = await start({
    kubernetes: { namespace: NS, kubeconfig: cluster.kubeconfig },
    sources: {
      backend: 's3',
      s3: { endpoint: moto.endpoint, bucket: 'bench-sources', forcePathStyle: true },
    },
    runtime: {
      backend: 'kubernetes',
      poolSize: 2,
      egress: { allowPrivate: ['127.0.0.1'] },
      kubernetes: { egress: { listen: `127.0.0.1:${await freePort()}`, address: '127.0.0.1' } },
    },
  });
  try {
    // Measured into full pools, as the local row is.
    for (let i = 0; i < 600; i += 1) {
      const res = await fetch(`${k8s.baseURL}/readyz`);
      if (res.status === 200) break;
      await sleep(100);
    }
    const k8sMs = await deploys(k8s, source, n, 'k8s');
    const p50 = percentile(k8sMs, 50) / percentile(localMs, 50);
    return {
      benchmark: 'k8s-deploy p50',
      measured: `${round(percentile(k8sMs, 50), 1)} ms (p99 ${round(percentile(k8sMs, 99), 1)} ms) deploy → live on the test cluster`,
      baseline: `${round(percentile(localMs, 50), 1)} ms local runtime (p99 ${round(percentile(localMs, 99), 1)} ms)`,
      ratio: round(p50),
      target: 'report',
      pass: true,
    };
  } finally {
    await k8s.close();
    await node.stop();
    await cluster.stop();
    await moto.stop();
  }
}

async function start(raw: Record<string, unknown>): Promise<Running> {
  const config = parseConfig({
    ...raw,
    server: { listen: '127.0.0.1:0', dataDir: mkdtempSync(join(tmpdir(), 'slipway-bench-')) },
    auth: { apiKeys: [{ key: KEY, name: 'bench', role: 'admin' }] },
  });
  return startSlipway(config, { logger: false });
}

async function deploys(s: Running, source: Buffer, n: number, label: string): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i += 1) {
    const name = `${label}-deploy-${i}`;
    const started = performance.now();
    const res = await deploy(s.baseURL, KEY, { name }, source);
    if (res.status !== 200) throw new Error(`${label}: deploy answered ${res.status}`);
    const page = await fetchApp(String(res.body.url));
    if (page.status !== 200) throw new Error(`${label}: URL answered ${page.status}`);
    times.push(performance.now() - started);
    await fetch(`${s.baseURL}/v1/apps/${name}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${KEY}` },
    });
    // As the local row: not back to back, the pools get their refill.
    await sleep(300);
  }
  return times;
}
