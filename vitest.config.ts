import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { postgresSkipReason } from './test/support/postgres.js';

/** Packs the package and installs it into scratch apps: npm and tsc load both cores. */
const CONSUMER_TEST = 'test/package/consumer.test.ts';
/** Run fleets of worker processes of two releases (and build each kept release from history once, to compare): as heavy. */
const DEPLOY_TESTS = 'test/deploy/**/*.test.ts';

/**
 * The store contract: these suites hand their stores `fixture.client()`, so
 * they run again on each other Redis client the library supports
 * (`TEST_REDIS_CLIENT`; the `suites` project runs them on ioredis 5).
 */
const STORE_CONTRACT = [
  'test/redis/receipt-store.test.ts',
  'test/redis/group-commit.test.ts',
  'test/redis/receipt-lifetimes.test.ts',
  'test/redis/receipt-listing.test.ts',
  'test/redis/receipt-history.test.ts',
  'test/redis/receipt-counts.test.ts',
  'test/redis/breaker-store.test.ts',
  'test/redis/receipt-breaker.test.ts',
  'test/redis/reconcile-store.test.ts',
  'test/offload/redis-store.test.ts',
  'test/offload/contract.test.ts',
  'test/durability/store.test.ts',
  'test/cluster/cluster.test.ts',
  'test/limits/limit-store.test.ts',
];
const OTHER_CLIENTS = ['ioredis-6', 'node-redis-6', 'node-redis-5'];

/**
 * Wrapper suites that run again with their BullMQ queues on PostgreSQL
 * (BullMQ 6's createPostgresBackend, `TEST_QUEUE_BACKEND=postgres`) and the
 * receipts on Redis. Left out: suites that read or write BullMQ's Redis keys
 * themselves (stall, reconcile-crash's resolve --retry-job), and
 * server-clock-wait, whose worker ten minutes fast may take its parked job
 * back under a lock that on PostgreSQL runs out by that worker's clock
 * (test/bullmq/postgres.test.ts parks from a slow one instead).
 */
const ON_POSTGRES = [
  'test/bullmq/crash.test.ts',
  'test/bullmq/abort.test.ts',
  'test/bullmq/wrapper.test.ts',
  'test/bullmq/interruption.test.ts',
  'test/bullmq/tiers.test.ts',
  'test/bullmq/late-settle.test.ts',
];

const POSTGRES_SKIP = postgresSkipReason();
if (POSTGRES_SKIP !== undefined) console.warn(`[postgres harness] not running the wrapper suites on PostgreSQL: ${POSTGRES_SKIP}`);

/**
 * The files that take longest (20 to 70 s each on a 2-core machine, most of
 * it waiting on processes they kill and restart), in that order. They start
 * first, each in its group, so the short files fill in beside them rather
 * than one of them running alone at the end.
 */
const LONGEST_FIRST = [
  'test/deploy/previous-release.test.ts',
  CONSUMER_TEST,
  'test/deploy/compact-layout.test.ts',
  'test/deploy/rolling-deploy-layout-4.test.ts',
  'test/deploy/rolling-deploy.test.ts',
  'test/durability/soak.test.ts',
  'test/limits/cap-race.test.ts',
  'test/transactional/wrapper-crash.test.ts',
  'test/limits/limit-race.test.ts',
  'test/transactional/chaos.test.ts',
  'test/frameworks/examples.test.ts',
  'test/limits/smooth-race.test.ts',
  'test/protocol/findings.test.ts',
  'test/bullmq/stall.test.ts',
  'test/mcp/worker-crash.test.ts',
  'test/console/console.e2e.test.ts',
  'test/protocol/conformance.property.test.ts',
  'test/protocol/defect-paths.test.ts',
];

/** Vitest's order (groups, then its own), with {@link LONGEST_FIRST} moved to the front of their group. */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const ordered = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const at = LONGEST_FIRST.indexOf(relative(this.ctx.config.root, spec.moduleId));
      return at === -1 ? LONGEST_FIRST.length : at;
    };
    const place = new Map(ordered.map((spec, i) => [spec, i]));
    return [...ordered].sort(
      (a, b) =>
        a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder || rank(a) - rank(b) || place.get(a)! - place.get(b)!,
    );
  }
}

/** A file of src/, for the aliases below. */
const source = (file: string) => fileURLToPath(new URL(`./src/${file}`, import.meta.url));

export default defineConfig({
  // The examples import the package by name, as its users do; in the suite that name
  // means the sources, as tsconfig.json's paths say (a fresh clone has no dist/).
  resolve: {
    alias: [
      { find: /^bullmq-tool-receipts$/, replacement: source('index.ts') },
      { find: /^bullmq-tool-receipts\/(.+)$/, replacement: source('$1/index.ts') },
    ],
  },
  test: {
    // Suites that start their own redis-server or worker processes need room on a 2-core machine.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Three files at a time on a 2-core machine: most of a file's time is spent waiting on the servers and worker
    // processes it started, and at two the cores sat idle for about two fifths of a run.
    maxWorkers: 3,
    // Each worker process keeps its modules from one file to the next: loading BullMQ, ioredis, zod and the sources
    // again for every file took about a fifth of the suite's CPU. So a file keeps no state in a module that another
    // relies on being fresh, restores what it patches (Date.now), and closes the servers and connections it opens.
    isolate: false,
    sequence: { sequencer: LongestFirst },
    projects: [
      {
        extends: true,
        test: { name: 'suites', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, CONSUMER_TEST, DEPLOY_TESTS] },
      },
      ...OTHER_CLIENTS.map((client) => ({
        extends: true as const,
        test: { name: `contract:${client}`, include: STORE_CONTRACT, env: { TEST_REDIS_CLIENT: client } },
      })),
      ...(POSTGRES_SKIP === undefined
        ? [{ extends: true as const, test: { name: 'queues:postgres', include: ON_POSTGRES, env: { TEST_QUEUE_BACKEND: 'postgres' } } }]
        : []),
      {
        // Runs after every other suite, so its installs and compiles do not
        // starve the timing-sensitive ones. (Among the suites, the deploy
        // tests made no measurable difference to a full run.)
        extends: true,
        test: { name: 'package', include: [CONSUMER_TEST, DEPLOY_TESTS], sequence: { groupOrder: 1 } },
      },
    ],
  },
});
