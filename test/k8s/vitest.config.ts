import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// `npm run test:k8s` = `vitest run --config test/k8s/vitest.config.ts`: the suites that need the
// real test cluster (test/k8s/build.sh first). Not part of the default `npm test` include.
export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    include: ['test/k8s/**/*.k8s.ts'],
    testTimeout: 120_000,
    hookTimeout: 300_000,
    // One cluster at a time: etcd + kube-apiserver + controllers already fill two cores.
    maxWorkers: 1,
    fileParallelism: false,
  },
});
