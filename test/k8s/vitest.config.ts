import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// `npm run test:k8s` = build.sh, then `vitest run --config test/k8s/vitest.config.ts` inside
// test/k8s/netns.sh: the suites that need the real test cluster, in a network namespace of their
// own. Not part of the default `npm test` include.
export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    include: ['test/k8s/**/*.k8s.ts'],
    // Inside test/k8s/netns.sh only: the suites add addresses to lo.
    globalSetup: ['test/k8s/netns-check.ts'],
    testTimeout: 120_000,
    hookTimeout: 300_000,
    // One cluster at a time: etcd + kube-apiserver + controllers already fill two cores.
    maxWorkers: 1,
    fileParallelism: false,
  },
});
