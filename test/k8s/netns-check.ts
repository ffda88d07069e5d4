// vitest globalSetup of the k8s suites: they run in the network namespace test/k8s/netns.sh makes
// (it names it in SLIPWAY_K8S_NETNS), since the test node and the egress test add addresses to lo.
// Started without it, the suites would add them to the host's loopback: refused, with what to run.
import { readlinkSync } from 'node:fs';

export default function setup(): void {
  if (process.env.SLIPWAY_K8S_NETNS === readlinkSync('/proc/self/ns/net')) return;
  throw new Error(
    'test/k8s: the suites run in a network namespace of their own, so that pod addresses never ' +
      'touch the host: `npm run test:k8s` (all), `npm run test:k8s -- test/k8s/e2e.k8s.ts` (one), ' +
      'or `bash test/k8s/netns.sh npx vitest run --config test/k8s/vitest.config.ts ...`',
  );
}
