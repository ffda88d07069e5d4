import { join } from 'node:path';
import { fetchApp } from '../test/support/deploy.js';
import { bareStart, childrenOf, commandOf, stop, treePss, treeRss } from './processes.js';
import { deployTo, type SlipwayProcess } from './slipway.js';
import { round, sleep } from './stats.js';
import type { Measured } from './targets.js';

/**
 * How long an app sits untouched before it counts as idle. V8 gives back what a busy spell grew
 * (the young generation an inject's unpack widened) once the process has been quiet for about
 * 8 s; a bare node is measured after the same wait, so both sides are in the same state.
 */
const IDLE_MS = 10_000;
/** The first look, right after the deploys: reported beside the idle figure. */
const FIRST_LOOK_MS = 2_000;

/**
 * Memory per idle Ready app: `count` deploys of the node example, then the RSS of each claimed
 * sandbox's process tree (bwrap, its pid 1, the agent that runs the app) against a bare
 * `node server.js` that has answered one request. PSS is reported beside it.
 */
export async function densityRow(
  s: SlipwayProcess,
  source: Buffer,
  examples: string,
  count: number,
): Promise<Measured> {
  for (let i = 0; i < count; i += 1) {
    const res = await deployTo(s.base, `dense-${i}`, source);
    if (res.status !== 200) throw new Error(`density: dense-${i} answered ${res.status}`);
    await fetchApp(res.body.url as string);
  }
  const deployed = performance.now();
  await sleep(FIRST_LOOK_MS);
  const first = perApp(s, count);
  await sleep(IDLE_MS - (performance.now() - deployed));
  const idle = perApp(s, count);

  const bare = await bareStart('server.js', join(examples, 'node'));
  await fetchApp(`http://127.0.0.1:${bare.port}/`);
  await sleep(IDLE_MS);
  const bareRss = treeRss(bare.child.pid as number);
  const barePss = treePss(bare.child.pid as number);
  await stop(bare.child);
  return {
    id: 'density',
    benchmark: `density (${count} apps)`,
    measured:
      `${mib(idle.rss)} MiB RSS (${mib(idle.pss)} PSS) per app idle ${IDLE_MS / 1000} s; ` +
      `${mib(first.rss)} MiB ${FIRST_LOOK_MS / 1000} s after the last deploy`,
    baseline: `${mib(bareRss)} MiB RSS (${mib(barePss)} PSS) bare node idle ${IDLE_MS / 1000} s`,
    figures: {
      ratio: round(idle.rss / bareRss),
      firstLookRatio: round(first.rss / bareRss),
      pssRatio: round(idle.pss / barePss),
    },
  };
}

/** Mean RSS and PSS of the `count` largest sandbox trees: the claimed ones; the rest are pools. */
function perApp(s: SlipwayProcess, count: number): { rss: number; pss: number } {
  // Sandboxes are the server's bwrap children (`/usr/bin/bwrap --args 3 -- node agent.mjs`).
  const sandboxes = childrenOf(s.child.pid as number).filter((pid) =>
    (commandOf(pid).split(' ')[0] ?? '').endsWith('bwrap'),
  );
  const trees = sandboxes
    .map((pid) => ({ rss: treeRss(pid), pss: treePss(pid) }))
    .sort((a, b) => a.rss - b.rss)
    .slice(-count);
  return {
    rss: trees.reduce((a, b) => a + b.rss, 0) / trees.length,
    pss: trees.reduce((a, b) => a + b.pss, 0) / trees.length,
  };
}

function mib(bytes: number): number {
  return round(bytes / 1048576, 1);
}
