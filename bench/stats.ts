/**
 * `npm run bench:stats`: how long `tool-receipts stats` (the store's
 * `stats()`) takes on a large keyspace, and whether its counts are exact.
 *
 * Loads BENCH_STATS_RUNS runs (default 10,000) of BENCH_STATS_PER_RUN
 * receipts (default 100) with bench/load-receipts.lua: 95% completed, 2%
 * failed, 2% running on a live lease, 1% ambiguous, effects mixed. The
 * loader's field layout is first checked against receipts the real store
 * writes. Then times `stats()` over the prefix and for one tenant
 * (BENCH_STATS_ROUNDS rounds, default 3, median) and compares the counts
 * with what was loaded. Starts its own redis-server (or uses REDIS_URL,
 * touching only its prefix).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { Redis } from 'ioredis';
import { ReceiptStore, RunRegistry, receiptCountRedisKey, receiptRedisKey, runIndexRedisKey } from '../src/redis/index.js';
import { expandIncludes } from '../src/redis/scripts/scripts.js';
import { statsCommand } from '../src/cli/commands/stats.js';
import { startRedis } from '../test/support/redis.js';
import { median, redisVersion, unlinkMatching } from './support.js';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const RUNS = env('BENCH_STATS_RUNS', 10_000);
const PER_RUN = env('BENCH_STATS_PER_RUN', 100);
const ROUNDS = env('BENCH_STATS_ROUNDS', 3);
const TENANTS = 50;
const RETENTION_MS = 3_600_000;

/** The state of receipt `i` of a run: c completed, f failed, r running, a ambiguous. */
const stateOf = (i: number): string => (i % 100 === 0 ? 'a' : i % 100 < 3 ? 'f' : i % 100 < 5 ? 'r' : 'c');
const effectOf = (i: number): string => (i % 3 === 0 ? 'r' : 'o');

type Loader = Redis & { loadReceipts(...args: (string | number)[]): Promise<number> };

async function load(redis: Loader, registry: RunRegistry, run: number): Promise<void> {
  const prefix = registry.prefix;
  const tenantId = `tenant-${run % TENANTS}`;
  const runId = `run-${run}`;
  await registry.register(tenantId, runId);
  const keys = [runIndexRedisKey(prefix, tenantId, runId), receiptCountRedisKey(prefix, tenantId, runId)];
  let states = '';
  let effects = '';
  for (let i = 0; i < PER_RUN; i++) {
    const argsHash = createHash('sha256').update(`${run}/${i}`).digest('hex');
    keys.push(receiptRedisKey(prefix, { tenantId, runId, toolName: 'send_email', argsHash }));
    // An ambiguous receipt is opaque, whatever the effect column says.
    states += stateOf(i);
    effects += stateOf(i) === 'a' ? 'o' : effectOf(i);
  }
  await redis.loadReceipts(keys.length, ...keys, tenantId, runId, 'send_email', RETENTION_MS, states, effects);
}

/** Field names of a receipt in each state as the real store writes it, against the loader's. */
async function checkLayout(redis: Loader, store: ReceiptStore, prefix: string): Promise<void> {
  const key = (argsHash: string) => ({ tenantId: 'layout', runId: 'real', toolName: 'send_email', argsHash });
  const completed = await store.claim(key('c'), { effect: 'opaque' });
  await store.complete(key('c'), completed.fence!, { content: 'ok' });
  const failed = await store.claim(key('f'), { effect: 'opaque' });
  await store.fail(key('f'), failed.fence!, { error: 'x', tier: 'neutral' });
  await store.claim(key('r'), { effect: 'opaque' });
  const loaded = ['c', 'f', 'r'].map((s) =>
    receiptRedisKey(prefix, { tenantId: 'layout', runId: 'loaded', toolName: 'send_email', argsHash: s }),
  );
  await redis.loadReceipts(
    5,
    runIndexRedisKey(prefix, 'layout', 'loaded'),
    receiptCountRedisKey(prefix, 'layout', 'loaded'),
    ...loaded,
    'layout',
    'loaded',
    'send_email',
    RETENTION_MS,
    'cfr',
    'ooo',
  );
  for (const [i, state] of ['c', 'f', 'r'].entries()) {
    const real = Object.keys(await redis.hgetall(store.redisKey(key(state)))).sort();
    const ours = Object.keys(await redis.hgetall(loaded[i]!)).sort();
    if (real.join() !== ours.join()) throw new Error(`loader layout for ${state} differs: real ${real.join()} / loaded ${ours.join()}`);
  }
  await unlinkMatching(redis, `${prefix}:*`);
}

/** Commands by server time spent, from INFO commandstats. */
function commandCosts(info: string): { command: string; calls: number; usec: number }[] {
  return [...info.matchAll(/^cmdstat_(\w+):calls=(\d+),usec=(\d+)/gm)]
    .map((m) => ({ command: m[1]!, calls: Number(m[2]), usec: Number(m[3]) }))
    .filter((c) => c.command !== 'config' && c.command !== 'info')
    .sort((a, b) => b.usec - a.usec);
}

async function main(): Promise<void> {
  const handle = await startRedis();
  const redis = new Redis(handle.url) as Loader;
  const prefix = `${handle.prefix}:stats`;
  const includes = new URL('../lua/includes/', import.meta.url);
  const loader = expandIncludes('load-receipts.lua', readFileSync(new URL('./load-receipts.lua', import.meta.url), 'utf8'), (name) =>
    readFileSync(new URL(`${name}.lua`, includes), 'utf8'),
  );
  redis.defineCommand('loadReceipts', { lua: loader });
  try {
    const store = new ReceiptStore({ redis, prefix });
    const registry = new RunRegistry(redis, prefix);
    await checkLayout(redis, store, prefix);
    const loadStarted = performance.now();
    for (let run = 0; run < RUNS; run += 50) {
      await Promise.all(Array.from({ length: Math.min(50, RUNS - run) }, (_, j) => load(redis, registry, run + j)));
    }
    const loadSeconds = (performance.now() - loadStarted) / 1000;
    const dbsize = await redis.dbsize();

    const expected = { c: 0, f: 0, r: 0, a: 0 } as Record<string, number>;
    for (let i = 0; i < PER_RUN; i++) expected[stateOf(i)]! += RUNS;
    const timings: number[] = [];
    const tenantTimings: number[] = [];
    const cpuMs: number[] = [];
    let stats = await store.stats();
    for (let round = 0; round < ROUNDS; round++) {
      let t = performance.now();
      const cpu = process.cpuUsage();
      stats = await store.stats();
      timings.push(performance.now() - t);
      const used = process.cpuUsage(cpu);
      cpuMs.push((used.user + used.system) / 1000);
      t = performance.now();
      await store.stats({ tenantId: 'tenant-7' });
      tenantTimings.push(performance.now() - t);
    }
    // The server's share of one count: every command it ran for it (scripts include their inner calls).
    if (handle.controllable) await redis.config('RESETSTAT');
    await store.stats();
    const serverStats = handle.controllable ? commandCosts(await redis.info('commandstats')) : [];
    // The slow path, once, for the ratio: SCAN of the keyspace and a read of every receipt.
    let t = performance.now();
    const scanned = await store.stats({ scan: true });
    const scanMs = performance.now() - t;
    const exact =
      JSON.stringify(scanned.byStatusAndEffect) === JSON.stringify(stats.byStatusAndEffect) &&
      stats.total === RUNS * PER_RUN &&
      stats.runs === RUNS &&
      stats.byStatus.completed === expected['c'] &&
      stats.byStatus.failed === expected['f'] &&
      stats.byStatus.running === (expected['r'] ?? 0) + (expected['a'] ?? 0) &&
      stats.ambiguous === expected['a'];
    console.log(
      `stats bench — redis ${await redisVersion(redis)}, node ${process.versions.node}, load ${(loadavg()[0] ?? 0).toFixed(1)}; ` +
        `${RUNS.toLocaleString('en-US')} runs x ${PER_RUN} receipts loaded in ${loadSeconds.toFixed(1)} s (${dbsize.toLocaleString('en-US')} keys)`,
    );
    console.log(
      `  stats() over the prefix       median ${median(timings).toFixed(0)} ms  (rounds: ${timings.map((t) => t.toFixed(0)).join(', ')})`,
    );
    console.log(`    of which this process's CPU median ${median(cpuMs).toFixed(0)} ms (the rest is the server and waiting)`);
    console.log(`  stats() for one tenant (1/${TENANTS})  median ${median(tenantTimings).toFixed(0)} ms`);
    console.log(`  stats({ scan: true }) (reads every receipt, the earlier way)  ${scanMs.toFixed(0)} ms`);
    if (serverStats.length > 0) {
      // What stats() sends itself; a script's time already holds the commands it ran.
      const sent = serverStats.filter((c) => ['evalsha', 'eval', 'fcall', 'zrange', 'time'].includes(c.command));
      const total = sent.reduce((sum, c) => sum + c.usec, 0);
      const list = (cs: typeof serverStats) => cs.map((c) => `${c.command} ${c.calls}x ${(c.usec / 1000).toFixed(0)} ms`).join(', ');
      console.log(
        `  server time of one stats(): ${(total / 1000).toFixed(0)} ms (${list(sent)}; inside the scripts: ${list(serverStats.filter((c) => !sent.includes(c)).slice(0, 4))})`,
      );
    }
    console.log(
      `  counts exact: ${exact ? 'yes' : 'NO'}  ${JSON.stringify({ total: stats.total, byStatus: stats.byStatus, ambiguous: stats.ambiguous })}`,
    );
    console.log('  what tool-receipts stats prints for it:');
    await statsCommand({
      store,
      out: { write: (text: string) => process.stdout.write(text.replace(/^(?=.)/gm, '    ')) },
      args: { json: false },
    });
    if (!exact) process.exitCode = 1;
  } finally {
    if (!handle.controllable) await unlinkMatching(redis, `${prefix}:*`);
    redis.disconnect();
    await handle.stop();
  }
}

await main();
