/**
 * The `failed-redeploy` row (#10, blue/green): a redeploy that crashes at start, repeated, under a
 * steady request loop on the app's URL. Every request must get the serving version's answer:
 * target zero failed requests. Reports the failed requests against the loop's request count.
 */
import { nodeApp } from '../test/support/apps.js';
import { requestLoop } from '../test/support/request-loop.js';
import { tarGz } from '../test/support/tarball.js';
import { api, deployTo, type SlipwayProcess } from './slipway.js';
import { sleep } from './stats.js';
import type { Measured } from './targets.js';

const APP = 'failed-redeploy';
const REDEPLOYS = 10;

export async function failedRedeployRow(s: SlipwayProcess): Promise<Measured> {
  const first = await deployTo(s.base, APP, await nodeApp('v1'));
  if (first.status !== 200) throw new Error(`failed-redeploy: v1 answered ${first.status}`);
  const crashing = await tarGz({
    'package.json': JSON.stringify({ name: APP, main: 'server.js' }),
    'server.js': 'console.error("cannot start"); process.exit(1);',
  });
  const loop = requestLoop(first.body.url ?? '', (body) => body.startsWith('v1 '));
  await sleep(300);
  const answers: number[] = [];
  for (let i = 0; i < REDEPLOYS; i += 1) {
    answers.push((await deployTo(s.base, APP, crashing)).status);
    await sleep(200); // the loop goes on between redeploys, as users would
  }
  await sleep(500);
  const { answers: requests, failed } = await loop.stop();
  await api(s.base, 'DELETE', `/v1/apps/${APP}`);
  const refused = answers.filter((status) => status === 500).length;
  return {
    id: 'failed redeploy',
    measured: `${failed.length} failed requests during ${REDEPLOYS} redeploys crashing at start`,
    baseline: `${requests.length} requests in the loop; ${refused}/${REDEPLOYS} deploys 500`,
    figures: {
      ratio: requests.length === 0 ? 1 : failed.length / requests.length,
      failed: failed.length,
    },
    // No loop, or a crashing redeploy that did not fail: the row measured nothing.
    ok: requests.length > 0 && refused === REDEPLOYS,
  };
}
