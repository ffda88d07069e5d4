import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Sandboxes and servers are real processes: two cores do not run many suites at once well.
    maxWorkers: 2,
  },
});
