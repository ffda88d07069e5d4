/**
 * The cluster half of the `k8s-deploy` row (k8s-deploy.ts), run inside test/k8s/netns.sh:
 * `bash test/k8s/netns.sh node --import tsx bench/k8s-deploy-netns.ts N`. Prints the N deploys'
 * times (ms) and stages on one line after TIMES_MARK.
 */
import { join, resolve } from 'node:path';
import { tarGzDir } from '../test/support/tarball.js';
import { k8sDeploys, TIMES_MARK } from './k8s-deploy.js';

if (!process.env.SLIPWAY_K8S_NETNS) {
  throw new Error('bench/k8s-deploy-netns.ts runs inside test/k8s/netns.sh (see k8s-deploy.ts)');
}
const n = Number(process.argv[2]);
if (!Number.isInteger(n) || n < 1)
  throw new Error(`k8s-deploy: a count of deploys, not ${process.argv[2]}`);
const source = await tarGzDir(join(resolve('examples'), 'node'));
console.log(`${TIMES_MARK}${JSON.stringify(await k8sDeploys(source, n))}`);
