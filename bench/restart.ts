/**
 * The `restart` row (design.md §8): 20 Ready apps and 20 clients looping over them, across a
 * SIGTERM and a new start on the same data dir with restart continuity on. Reported: requests
 * that failed (target 0), the longest any one request took while the control plane was away
 * against the p99 before it (the gap an app's visitor felt; target 0 ms beyond that), and the
 * time from SIGTERM until the new control plane serves the API. Beside it, the same restart with
 * continuity off, timed until every app serves again: what the apps cost without it.
 */
import { Agent, request } from 'node:http';
import { nodeApp } from '../test/support/apps.js';
import { fetchApp } from '../test/support/deploy.js';
import { stop } from './processes.js';
import { deployTo, startSlipwayProcess, type SlipwayProcess } from './slipway.js';
import { percentile, round, sleep } from './stats.js';
import type { Measured } from './targets.js';

const APPS = 20;
const CLIENTS = 20;

export async function restartRow(): Promise<Measured> {
  const coldMs = await restartWithout();
  let s = await startSlipwayProcess(4, undefined, true);
  try {
    const hosts = await deployApps(s);
    const loop = clientLoop(s.port, hosts);
    await sleep(2_000);
    const before = loop.latencies.splice(0);
    const signalled = performance.now();
    await stop(s.child);
    s = await startSlipwayProcess(4, { dataDir: s.dataDir, port: s.port }, true);
    // The front door accepts all along: the API is back when the new control plane answers.
    await ready(s);
    const apiBack = performance.now() - signalled;
    await sleep(2_000);
    const { failed, latencies } = await loop.stop();
    const p99 = percentile(before, 99);
    const longest = Math.max(...latencies);
    const gap = Math.max(0, longest - p99);
    return {
      id: 'restart',
      measured: `${failed} failed of ${latencies.length + before.length} requests; longest request ${round(longest, 0)} ms (p99 before ${round(p99, 1)} ms): a ${round(gap, 0)} ms gap; API back ${round(apiBack, 0)} ms after SIGTERM`,
      baseline: `${round(coldMs, 0)} ms SIGTERM to all ${APPS} serving without continuity`,
      figures: { ratio: round(gap / coldMs), failed, gapMs: round(gap, 0) },
    };
  } finally {
    await s.close();
    // Continuity leaves the apps running: a start without it takes them back and ends them.
    const last = await startSlipwayProcess(0, { dataDir: s.dataDir, port: s.port });
    await ready(last);
    await last.close();
  }
}

async function deployApps(s: SlipwayProcess): Promise<string[]> {
  const hosts: string[] = [];
  for (let i = 0; i < APPS; i += 1) {
    const res = await deployTo(s.base, `restart-${i}`, await nodeApp(`r${i}`));
    if (res.status !== 200) throw new Error(`restart: deploy answered ${res.status}`);
    hosts.push(new URL(res.body.url ?? '').host);
  }
  return hosts;
}

/** CLIENTS keep-alive clients, round-robin over the apps, until stopped. */
function clientLoop(port: number, hosts: string[]) {
  const latencies: number[] = [];
  let failed = 0;
  let running = true;
  const one = (agent: Agent, host: string): Promise<boolean> =>
    new Promise((resolve) => {
      const req = request(
        { host: '127.0.0.1', port, path: '/', agent, headers: { host } },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode === 200));
          res.on('error', () => resolve(false));
        },
      );
      req.on('error', () => resolve(false));
      req.end();
    });
  const clients = Array.from({ length: CLIENTS }, async (_, c) => {
    const agent = new Agent({ keepAlive: true });
    for (let i = c; running; i += 1) {
      const started = performance.now();
      if (!(await one(agent, hosts[i % hosts.length] as string))) failed += 1;
      latencies.push(performance.now() - started);
    }
    agent.destroy();
  });
  return {
    latencies,
    async stop() {
      running = false;
      await Promise.all(clients);
      return { failed, latencies };
    },
  };
}

/** The old way, for scale: continuity off, SIGTERM, start, until every app serves again. */
async function restartWithout(): Promise<number> {
  let s = await startSlipwayProcess(4);
  try {
    const hosts = await deployApps(s);
    const signalled = performance.now();
    await stop(s.child);
    s = await startSlipwayProcess(4, { dataDir: s.dataDir, port: s.port });
    await Promise.all(hosts.map((host) => untilServing(`http://${host}/`)));
    return performance.now() - signalled;
  } finally {
    await s.close();
  }
}

async function ready(s: SlipwayProcess): Promise<void> {
  for (let i = 0; i < 600; i += 1) {
    const res = await fetch(`${s.base}/readyz`).catch(() => undefined);
    if (res?.status === 200) return;
    await sleep(50);
  }
  throw new Error('restart: the server never got ready');
}

async function untilServing(url: string): Promise<void> {
  for (let i = 0; i < 6_000; i += 1) {
    const res = await fetchApp(url).catch(() => undefined);
    if (res?.status === 200) return;
    await sleep(5);
  }
  throw new Error(`restart: ${url} never served again`);
}
