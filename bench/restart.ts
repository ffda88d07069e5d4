/**
 * The `restart` row (design.md §8): 20 Ready apps and 20 clients looping over them, across a
 * SIGTERM and a new start on the same data dir with restart continuity on. Reported: requests
 * that failed (target 0), and the gap an app's visitors felt: the longest time any one app went
 * without an answer while the control plane restarted, beyond the longest in a window of the same
 * load without a restart: another control plane booting beside it on its own data dir. A booting
 * control plane takes most of a core, so that baseline is the cost of the CPU it takes, not of
 * the data path (target 0 ms beyond it). Also the time from SIGTERM until the new control plane
 * serves the API, and beside it the same restart with continuity off, timed until every app
 * serves again: what the apps cost without it.
 */
import { Agent, request } from 'node:http';
import { nodeApp } from '../test/support/apps.js';
import { fetchApp } from '../test/support/deploy.js';
import { stop } from './processes.js';
import { deployTo, startSlipwayProcess, type SlipwayProcess } from './slipway.js';
import { round, sleep } from './stats.js';
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
    const beside = await window(loop, async () => {
      const other = await startSlipwayProcess(4);
      await ready(other);
      await other.close();
    });
    const signalled = performance.now();
    let apiBack = 0;
    const across = await window(loop, async () => {
      await stop(s.child);
      s = await startSlipwayProcess(4, { dataDir: s.dataDir, port: s.port }, true);
      // The front door accepts all along: the API is back when the new control plane answers.
      await ready(s);
      apiBack = performance.now() - signalled;
    });
    const { failed, requests } = await loop.stop();
    const gap = Math.max(0, across.stall - beside.stall);
    return {
      id: 'restart',
      measured: `${failed} failed of ${requests} requests; longest an app went unanswered ${round(across.stall, 0)} ms across the restart (longest request ${round(across.longest, 0)} ms): a ${round(gap, 0)} ms gap; API back ${round(apiBack, 0)} ms after SIGTERM`,
      baseline: `${round(beside.stall, 0)} ms unanswered (longest request ${round(beside.longest, 0)} ms) while another control plane booted beside it; ${round(coldMs, 0)} ms SIGTERM to all ${APPS} serving without continuity`,
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

type ClientLoop = ReturnType<typeof clientLoop>;

/**
 * What `during` cost the apps' visitors, counted from when it started until 2 s after it ended:
 * the longest time any one app went without an answer, and the longest request.
 */
async function window(
  loop: ClientLoop,
  during: () => Promise<void>,
): Promise<{ stall: number; longest: number }> {
  const from = performance.now();
  await during();
  await sleep(2_000);
  const to = performance.now();
  let stall = 0;
  for (const host of new Set(loop.answers.map((a) => a.host))) {
    let last = from;
    for (const a of loop.answers) {
      if (a.host !== host || a.at < from || a.at > to) continue;
      stall = Math.max(stall, a.at - last);
      last = a.at;
    }
    stall = Math.max(stall, to - last);
  }
  const longest = loop.answers
    .filter((a) => a.at >= from && a.at <= to)
    .reduce((most, a) => Math.max(most, a.ms), 0);
  return { stall, longest };
}

/** CLIENTS keep-alive clients, round-robin over the apps, until stopped; answers in time order. */
function clientLoop(port: number, hosts: string[]) {
  const answers: { host: string; at: number; ms: number }[] = [];
  let requests = 0;
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
      const host = hosts[i % hosts.length] as string;
      const started = performance.now();
      const ok = await one(agent, host);
      const at = performance.now();
      requests += 1;
      if (ok) answers.push({ host, at, ms: at - started });
      else failed += 1;
    }
    agent.destroy();
  });
  return {
    answers,
    async stop() {
      running = false;
      await Promise.all(clients);
      return { failed, requests };
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
