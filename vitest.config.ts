import { configDefaults, defineConfig } from 'vitest/config';

/** Packs the package and installs it into scratch apps: npm and tsc load both cores. */
const CONSUMER_TEST = 'test/package/consumer.test.ts';
/** Build the previous release and run a fleet of worker processes of both releases: as heavy. */
const DEPLOY_TESTS = 'test/deploy/**/*.test.ts';

export default defineConfig({
  test: {
    // Suites that start their own redis-server or worker processes need room on a 2-core machine.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: { name: 'suites', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, CONSUMER_TEST, DEPLOY_TESTS] },
      },
      {
        // Runs after every other suite, so its installs and compiles do not
        // starve the timing-sensitive ones.
        extends: true,
        test: { name: 'package', include: [CONSUMER_TEST, DEPLOY_TESTS], sequence: { groupOrder: 1 } },
      },
    ],
  },
});
