/**
 * The `wake-general` row (design.md §8): waking a general-lane app (test/corpus/express, installed
 * from the host's registry on its first start) against waking the same app on the fast lane (its
 * node_modules vendored), interleaved in the same run, so the ratio is what the lane costs and not
 * what Express costs to load. A general-lane wake unpacks the release's built tree instead of
 * installing: target ≤ 1.5×.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fetchApp } from '../test/support/deploy.js';
import { tarGzDir } from '../test/support/tarball.js';
import { api, deployTo, type SlipwayProcess } from './slipway.js';
import { percentile, round, sleep } from './stats.js';
import type { Measured } from './targets.js';

export async function generalWakeRow(s: SlipwayProcess, n: number): Promise<Measured> {
  const dir = resolve('test/corpus/express');
  const general = await tarGzDir(dir);
  const urls = {
    fast: await ready(s, 'wake-fast', await vendored(dir)),
    general: await ready(s, 'wake-general', general),
  };
  const times: Record<keyof typeof urls, number[]> = { fast: [], general: [] };
  for (let i = 0; i < Math.min(n, 20); i += 1) {
    for (const lane of ['fast', 'general'] as const) {
      await api(s.base, 'POST', `/v1/apps/wake-${lane}/suspend`);
      await sleep(300);
      const started = performance.now();
      const page = await fetchApp(urls[lane]);
      if (page.status !== 200) throw new Error(`wake-${lane}: URL answered ${page.status}`);
      times[lane].push(performance.now() - started);
    }
  }
  const ratio = percentile(times.general, 50) / percentile(times.fast, 50);
  return {
    id: 'wake (general lane) p50',
    measured: `${round(percentile(times.general, 50), 1)} ms`,
    baseline: `${round(percentile(times.fast, 50), 1)} ms fast-lane wake, same app`,
    figures: { ratio: round(ratio) },
  };
}

/** The project with its dependencies installed by the host's npm, as a fast-lane source. */
async function vendored(dir: string): Promise<Buffer> {
  const copy = mkdtempSync(join(tmpdir(), 'slipway-bench-vendored-'));
  try {
    cpSync(dir, copy, { recursive: true });
    execFileSync('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund'], { cwd: copy });
    return await tarGzDir(copy);
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

/** Deploys and waits until the app is Ready (a general-lane deploy may answer 202 first). */
async function ready(s: SlipwayProcess, name: string, source: Buffer): Promise<string> {
  const res = await deployTo(s.base, name, source);
  if (res.status !== 200 && res.status !== 202) {
    throw new Error(`${name}: deploy answered ${res.status} ${JSON.stringify(res.body)}`);
  }
  for (let i = 0; i < 1200; i += 1) {
    const app = (await (await api(s.base, 'GET', `/v1/apps/${name}`)).json()) as {
      phase?: string;
      url?: string;
    };
    if (app.phase === 'Ready' && app.url) return app.url;
    if (app.phase === 'Failed') throw new Error(`${name}: Failed ${JSON.stringify(app)}`);
    await sleep(100);
  }
  throw new Error(`${name}: not Ready after 120 s`);
}
