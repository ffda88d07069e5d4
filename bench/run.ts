/**
 * `npm run bench`: every row of design.md §8, each against a baseline measured in this same run.
 * Prints one table, then the figures as JSON. BENCH_N sets the deploy sample size (default 50).
 */
import { join, resolve } from 'node:path';
import { fetchApp } from '../test/support/deploy.js';
import { tarGzDir } from '../test/support/tarball.js';
import { densityRow } from './density.js';
import { failedRedeployRow } from './failed-redeploy.js';
import { generalWakeRow } from './general-wake.js';
import { k8sDeployRow } from './k8s-deploy.js';
import { minimalProxy } from './minimal-proxy.js';
import { bareStart, stop } from './processes.js';
import { restartRow } from './restart.js';
import { startRow } from './start.js';
import { wrk } from './wrk.js';
import { measureRollback } from './rollback.js';
import { api, BENCH_KEY, deployTo, startSlipwayProcess, type SlipwayProcess } from './slipway.js';
import { percentile, round, sleep, stageMedians, withClientSide } from './stats.js';
import { judge, summary, type Measured, type Row } from './targets.js';

const N = Number(process.env.BENCH_N ?? 50);
const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 5);
/** Each side of the proxy and api rows is warmed this long before it is measured. */
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 2);
const DENSITY_APPS = Number(process.env.BENCH_DENSITY_APPS ?? 100);
const EXAMPLES = resolve('examples');

const rows: Row[] = [];
const add = (m: Measured): void => void rows.push(judge(m));

async function main(): Promise<void> {
  const node = await tarGzDir(join(EXAMPLES, 'node'));
  const site = await tarGzDir(join(EXAMPLES, 'static'));
  const slipway = await startSlipwayProcess(4);
  const only = process.env.BENCH_ONLY?.split(',');
  const want = (row: string): boolean => !only || only.includes(row);
  try {
    if (want('deploy')) {
      await deployRow(slipway, 'deploy', node, () =>
        bareStart('server.js', join(EXAMPLES, 'node')),
      );
    }
    if (want('deploy-static')) {
      const staticServer = resolve('bench/fixtures/static-server.mjs');
      await deployRow(slipway, 'deploy-static', site, () =>
        bareStart(staticServer, EXAMPLES, [join(EXAMPLES, 'static')]),
      );
    }
    if (want('wake')) await wakeRow(slipway, node);
    if (want('wake-general')) add(await generalWakeRow(slipway, N));
    if (want('rollback')) await rollbackRow(slipway);
    if (want('failed-redeploy')) add(await failedRedeployRow(slipway));
    if (want('proxy')) await proxyRow(slipway, node);
    if (want('api')) await apiRow(slipway, node);
    if (want('burst')) await burstRow(slipway, node);
    if (want('density')) add(await densityRow(slipway, node, EXAMPLES, DENSITY_APPS));
    if (want('restart')) add(await restartRow());
    if (want('start')) add(await startRow());
    if (want('k8s-deploy')) add(await k8sDeployRow(node, Math.min(N, 20)));
  } finally {
    await slipway.close();
  }
  printTable();
}

/** Deploys of a new app until its URL answers, interleaved with the baseline's cold starts. */
async function deployRow(
  s: SlipwayProcess,
  name: 'deploy' | 'deploy-static',
  source: Buffer,
  baseline: () => ReturnType<typeof bareStart>,
): Promise<void> {
  const deploys: number[] = [];
  const bares: number[] = [];
  const stages: Record<string, number>[] = [];
  for (let i = 0; i < N; i += 1) {
    const bare = await baseline();
    bares.push(bare.ms);
    await stop(bare.child);
    const app = `${name}-${i}`;
    const started = performance.now();
    const res = await deployTo(s.base, app, source);
    if (res.status !== 200)
      throw new Error(`${name}: deploy answered ${res.status} ${JSON.stringify(res.body)}`);
    const answered = performance.now();
    const page = await fetchApp(res.body.url as string);
    if (page.status !== 200) throw new Error(`${name}: URL answered ${page.status}`);
    deploys.push(performance.now() - started);
    stages.push(withClientSide(res.stages, answered - started, performance.now() - answered));
    await api(s.base, 'DELETE', `/v1/apps/${app}`);
    // Deploys are not back to back in real use: give the pool its background refill.
    await sleep(300);
  }
  const slowest = deploys
    .map((ms, i) => `#${i} ${round(ms, 1)} ms`)
    .sort((a, b) => Number(b.split(' ')[1]) - Number(a.split(' ')[1]))
    .slice(0, 5);
  console.error(`${name}: slowest deploys ${slowest.join(', ')}`);
  const p50 = percentile(deploys, 50) / percentile(bares, 50);
  const p99 = percentile(deploys, 99) / percentile(bares, 99);
  add({
    id: `${name} p50`,
    measured: `${round(percentile(deploys, 50), 1)} ms`,
    baseline: `${round(percentile(bares, 50), 1)} ms bare start`,
    figures: { ratio: round(p50) },
    stages: stageMedians(stages),
  });
  // §8 sets a p99 target for the node app's deploy only.
  if (name === 'deploy') {
    add({
      id: 'deploy p99',
      measured: `${round(percentile(deploys, 99), 1)} ms`,
      baseline: `${round(percentile(bares, 99), 1)} ms bare start`,
      figures: { ratio: round(p99) },
    });
  }
}

async function wakeRow(s: SlipwayProcess, source: Buffer): Promise<void> {
  const res = await deployTo(s.base, 'wake', source);
  s.wakes.splice(0);
  const wakes: number[] = [];
  const bares: number[] = [];
  for (let i = 0; i < Math.min(N, 30); i += 1) {
    await api(s.base, 'POST', '/v1/apps/wake/suspend');
    await sleep(300);
    const bare = await bareStart('server.js', join(EXAMPLES, 'node'));
    bares.push(bare.ms);
    await stop(bare.child);
    const started = performance.now();
    const page = await fetchApp(res.body.url as string);
    if (page.status !== 200) throw new Error(`wake: URL answered ${page.status}`);
    wakes.push(performance.now() - started);
  }
  const ratio = percentile(wakes, 50) / percentile(bares, 50);
  add({
    id: 'wake p50',
    measured: `${round(percentile(wakes, 50), 1)} ms`,
    baseline: `${round(percentile(bares, 50), 1)} ms bare start`,
    figures: { ratio: round(ratio) },
    stages: stageMedians(s.wakes.splice(0)),
  });
}

/** Rollback to the previous version (kept warm) against a redeploy, interleaved in this run. */
async function rollbackRow(s: SlipwayProcess): Promise<void> {
  const { previous, redeploy, cold, previousStages } = await measureRollback(s, Math.min(N, 30));
  const ratio = percentile(previous, 50) / percentile(redeploy, 50);
  const ms = (values: number[], p: number) => `${round(percentile(values, p), 1)} ms`;
  add({
    id: 'rollback p50',
    measured: `${ms(previous, 50)} to previous (p99 ${ms(previous, 99)}); ${ms(cold, 50)} two back`,
    baseline: `${ms(redeploy, 50)} redeploy (p99 ${ms(redeploy, 99)})`,
    figures: { ratio: round(ratio) },
    stages: stageMedians(previousStages),
  });
}

/**
 * The data path: the example node app through Slipway against the same app run bare on its own
 * port, both under wrk; the row names the data path that carried it (native or the Node router).
 */
async function proxyRow(s: SlipwayProcess, source: Buffer): Promise<void> {
  const res = await deployTo(s.base, 'proxy', source);
  const host = new URL(res.body.url as string).host;
  const load = { connections: 50, seconds: LOAD_SECONDS, warmupSeconds: WARMUP_SECONDS };
  const routed = await wrk(`http://127.0.0.1:${s.port}/`, { ...load, headers: { host } });
  const floor = await minimalProxy(s.dataDir, host);
  const least =
    floor && (await wrk(`http://127.0.0.1:${floor.port}/`, load).finally(() => floor.close()));
  const bare = await bareStart('server.js', join(EXAMPLES, 'node'));
  const direct = await wrk(`http://127.0.0.1:${bare.port}/`, load).finally(() => stop(bare.child));
  const ratio = routed.rps / direct.rps;
  const p99 = routed.p99Ms / direct.p99Ms;
  const floorText = least
    ? `; a minimal HAProxy (1 thread, no rules) to the same app: ${round(least.rps, 0)} req/s, p99 ${round(least.p99Ms, 2)} ms`
    : '';
  add({
    id: 'proxy',
    benchmark: `proxy (${await dataPathOf(s)})`,
    measured: `${round(routed.rps, 0)} req/s, p99 ${round(routed.p99Ms, 2)} ms (${routed.errors} errors)`,
    baseline: `${round(direct.rps, 0)} req/s, p99 ${round(direct.p99Ms, 2)} ms: the app on its own port${floorText}`,
    figures: {
      ratio: round(ratio),
      p99Ratio: round(p99),
      errors: routed.errors,
      ...(least ? { minimalProxyRatio: round(least.rps / direct.rps) } : {}),
    },
  });
}

/** Which data path the server says carries visitors (its admin `/readyz`). */
async function dataPathOf(s: SlipwayProcess): Promise<string> {
  const body = (await (await api(s.base, 'GET', '/readyz')).json()) as {
    components?: { dataPath?: { kind?: string } };
  };
  return body.components?.dataPath?.kind ?? 'unknown';
}

async function apiRow(s: SlipwayProcess, source: Buffer): Promise<void> {
  await deployTo(s.base, 'api', source);
  const body = await (await api(s.base, 'GET', '/v1/apps/api')).text();
  const bare = await bareStart(resolve('bench/fixtures/api-baseline.mjs'), process.cwd(), [body]);
  try {
    const load = { connections: 50, seconds: LOAD_SECONDS, warmupSeconds: WARMUP_SECONDS };
    const headers = { authorization: `Bearer ${BENCH_KEY}` };
    const ours = await wrk(`http://127.0.0.1:${s.port}/v1/apps/api`, { ...load, headers });
    const base = await wrk(`http://127.0.0.1:${bare.port}/v1/apps/api`, load);
    const ratio = ours.rps / base.rps;
    add({
      id: 'api',
      measured: `${round(ours.rps, 0)} req/s (${ours.errors} errors)`,
      baseline: `${round(base.rps, 0)} req/s bare fastify`,
      figures: { ratio: round(ratio), errors: ours.errors },
    });
  } finally {
    await stop(bare.child);
  }
}

async function burstRow(s: SlipwayProcess, source: Buffer): Promise<void> {
  const started = performance.now();
  const results = await Promise.all(
    Array.from({ length: 50 }, (_, i) => deployTo(s.base, `burst-${i}`, source)),
  );
  const statuses = results.map((r) => r.status);
  const accepted = statuses.filter((st) => st === 200 || st === 202).length;
  const deadline = Date.now() + 180_000;
  for (let i = 0; i < 50; i += 1) {
    while (Date.now() < deadline) {
      const app = (await (await api(s.base, 'GET', `/v1/apps/burst-${i}`)).json()) as {
        phase: string;
      };
      if (app.phase === 'Ready') break;
      if (app.phase === 'Failed') throw new Error(`burst-${i} failed`);
      await sleep(50);
    }
  }
  const ms = performance.now() - started;
  if (Date.now() >= deadline) throw new Error('burst: not all apps Ready within 180 s');
  add({
    id: 'burst',
    measured: `50 concurrent deploys all Ready in ${round(ms / 1000, 2)} s`,
    baseline: `${accepted}/50 answered 200/202 (${statuses.filter((st) => st === 200).length} × 200)`,
    figures: { ratio: round(accepted / 50), lost: 50 - accepted },
  });
  for (let i = 0; i < 50; i += 1) await api(s.base, 'DELETE', `/v1/apps/burst-${i}`);
}

function printTable(): void {
  const header = ['benchmark', 'measured', 'baseline (same run)', 'ratio', 'target', 'met'];
  const lines = rows.map((r) => [
    r.benchmark,
    r.measured,
    r.baseline,
    `${r.ratio}×`,
    r.target,
    r.met ? 'yes' : 'no',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? '').length)));
  const fmt = (cells: string[]) =>
    `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  console.log(fmt(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const line of lines) console.log(fmt(line));
  const verdict = summary(rows);
  console.log(JSON.stringify({ node: process.version, n: N, summary: verdict, rows }, null, 2));
  console.log(verdict);
  // A row that missed its target fails the run, as a failed test would.
  if (rows.some((r) => !r.met)) process.exitCode = 1;
}

main().catch((err: unknown) => {
  console.error('bench failed:', err);
  process.exit(1);
});
