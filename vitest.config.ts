import { defineConfig } from 'vitest/config';

/**
 * The suites whose subject is the path visitors take to apps: run a second time against the
 * native front door (HAProxy), which must behave as the Node router does (test/support/data-path.ts).
 */
const DATA_PATH_SUITES = [
  'test/e2e/router.test.ts',
  'test/e2e/blue-green.test.ts',
  'test/e2e/private-apps.test.ts',
  'test/e2e/private-apps-tls.test.ts',
  'test/e2e/app-metrics.test.ts',
  'test/e2e/access-log.test.ts',
  'test/e2e/share-links.test.ts',
  'test/e2e/history.test.ts',
  'test/security/app-credentials.test.ts',
  'test/security/rebinding.test.ts',
  'test/faults/restart-continuity.test.ts',
  'test/faults/stop-everything.test.ts',
  'test/front/drain-close.test.ts',
  'test/front/oversize-close.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Sandboxes and servers are real processes: two cores do not run many suites at once well.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'node-router', include: ['test/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'native-front-door',
          include: DATA_PATH_SUITES,
          env: { SLIPWAY_TEST_DATA_PATH: 'native' },
        },
      },
    ],
  },
});
