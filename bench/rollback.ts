/**
 * The `rollback` row: rolling back to the version that ran just before (its sandbox kept warm)
 * against a normal redeploy of a new version of the same app, interleaved in the same run. Both are
 * timed from the request until the app's URL answers with the expected version.
 */
import { nodeApp } from '../test/support/apps.js';
import { fetchApp } from '../test/support/deploy.js';
import { BENCH_KEY, deployTo, serverTiming, type SlipwayProcess } from './slipway.js';
import { parseServerTiming } from '../src/stage-clock.js';
import { sleep, withClientSide } from './stats.js';

export interface RollbackSamples {
  /** Rollback to the previous version (warm). */
  previous: number[];
  /** Redeploy of a new version. */
  redeploy: number[];
  /** Rollback to two versions back (nothing warm: a fresh start of that source). */
  cold: number[];
  /** The Server-Timing stages of each rollback to the previous version. */
  previousStages: Record<string, number>[];
}

const APP = 'rollback-bench';

export async function measureRollback(s: SlipwayProcess, n: number): Promise<RollbackSamples> {
  const samples: RollbackSamples = { previous: [], redeploy: [], cold: [], previousStages: [] };
  // labels[v - 1]: what version v serves; a rollback serves what the version it restores served.
  const labels: string[] = [];
  const timed = async (into: number[], step: () => Promise<unknown>): Promise<void> => {
    const started = performance.now();
    await step();
    into.push(performance.now() - started);
    await sleep(300); // let the pool refill, as between real deploys
  };
  await redeploy(s, 'v0', labels);
  for (let i = 1; i <= n; i += 1) {
    await timed(samples.redeploy, () => redeploy(s, `v${i}`, labels));
    // Back to what ran just before the redeploy: its sandbox was kept warm.
    await timed(samples.previous, async () => {
      samples.previousStages.push(await rollback(s, labels.length - 1, labels));
    });
    if (i % 3 === 0) {
      // A version neither running nor kept: a fresh start of its source.
      const running = labels.at(-1);
      const kept = labels.at(-2);
      let version = labels.length;
      while (version > 1 && [running, kept].includes(labels[version - 1])) version -= 1;
      await timed(samples.cold, () => rollback(s, version, labels));
    }
  }
  return samples;
}

async function redeploy(s: SlipwayProcess, label: string, labels: string[]): Promise<void> {
  const res = await deployTo(s.base, APP, await nodeApp(label));
  if (res.status !== 200) throw new Error(`rollback: deploy answered ${res.status}`);
  labels.push(label);
  await answers(res.body.url as string, label);
}

async function rollback(
  s: SlipwayProcess,
  version: number,
  labels: string[],
): Promise<Record<string, number>> {
  const label = labels[version - 1] ?? '';
  const started = performance.now();
  // Sent as deployTo sends the redeploy it is measured against.
  const res = await fetchApp(`${s.base}/v1/apps/${APP}/rollback`, {
    method: 'POST',
    headers: { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ version }),
  });
  const body = JSON.parse(res.body) as { url?: string };
  if (res.status !== 200 || !body.url) {
    throw new Error(`rollback to ${version}: ${res.status} ${JSON.stringify(body)}`);
  }
  labels.push(label);
  const answered = performance.now();
  await answers(body.url, label);
  const stages = parseServerTiming(serverTiming(res.headers));
  return withClientSide(stages, answered - started, performance.now() - answered);
}

async function answers(url: string, label: string): Promise<void> {
  const page = await fetchApp(url);
  if (page.status !== 200 || !page.body.startsWith(`${label} `)) {
    throw new Error(`rollback: ${url} answered ${page.status} ${page.body}, not ${label}`);
  }
}
