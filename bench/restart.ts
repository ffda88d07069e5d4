/**
 * The `restart` row (#11): 20 Ready apps, then SIGTERM and a new start on the same data dir, timed
 * until every app's URL answers 200 again. Baseline: one app's cold deploy (a new app until its URL
 * answers, into a server with no warm sandbox), what bringing one app back from nothing costs.
 */
import { nodeApp } from '../test/support/apps.js';
import { fetchApp } from '../test/support/deploy.js';
import { stop } from './processes.js';
import { deployTo, startSlipwayProcess } from './slipway.js';
import { percentile, round, sleep } from './stats.js';

const APPS = 20;

export async function restartRow() {
  let s = await startSlipwayProcess(4);
  try {
    const urls: string[] = [];
    for (let i = 0; i < APPS; i += 1) {
      const res = await deployTo(s.base, `restart-${i}`, await nodeApp(`r${i}`));
      if (res.status !== 200) throw new Error(`restart: deploy answered ${res.status}`);
      urls.push(res.body.url ?? '');
    }
    const baseline = await coldDeploy();
    const signalled = performance.now();
    await stop(s.child);
    const spawned = performance.now();
    s = await startSlipwayProcess(4, { dataDir: s.dataDir, port: s.port });
    const listening = performance.now() - spawned;
    await Promise.all(urls.map((url) => untilServing(url)));
    const total = performance.now() - signalled;
    const fromStart = performance.now() - spawned;
    return {
      benchmark: 'restart',
      measured: `${round(total, 0)} ms SIGTERM to all ${APPS} serving (spawn to listening ${round(listening, 0)} ms, to all serving ${round(fromStart, 0)} ms)`,
      baseline: `${round(baseline, 1)} ms one cold deploy`,
      ratio: round(total / baseline),
      target: 'report; all serve again',
      pass: true, // untilServing throws for an app that never serves again
    };
  } finally {
    await s.close();
  }
}

/** Median of 3 deploys of a new app into a server with no warm pool: each boots its sandbox. */
async function coldDeploy(): Promise<number> {
  const s = await startSlipwayProcess(0);
  try {
    const times: number[] = [];
    for (let i = 0; i < 3; i += 1) {
      const source = await nodeApp(`cold${i}`);
      const started = performance.now();
      const res = await deployTo(s.base, `cold-${i}`, source);
      if ((await fetchApp(res.body.url ?? '')).status !== 200) throw new Error('restart: cold');
      times.push(performance.now() - started);
    }
    return percentile(times, 50);
  } finally {
    await s.close();
  }
}

async function untilServing(url: string): Promise<void> {
  for (let i = 0; i < 6_000; i += 1) {
    const res = await fetchApp(url).catch(() => undefined);
    if (res?.status === 200) return;
    await sleep(5);
  }
  throw new Error(`restart: ${url} never served again`);
}
