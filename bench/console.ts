/**
 * `npx tsx bench/console.ts` (also run by `npm run bench`): how long the
 * console's pages take with 1,000 receipts and with 1,000,000 in the same
 * runs, to show they answer from the indexes rather than from a walk of the
 * keyspace: a page's cost follows the registered runs and the receipts that
 * need a person, not the size of the keyspace.
 *
 * For each size it loads receipts with bench/load-receipts.lua (the loader
 * bench/stats.ts checks against the real store) into BENCH_CONSOLE_RUNS runs
 * (default 1,000, over 50 tenants), with the same ten ambiguous receipts at
 * every size (the first receipt of every hundredth run); then serves the
 * console in process and times each page over HTTP (BENCH_CONSOLE_ROUNDS
 * rounds, default 5, median). The sizes come from BENCH_CONSOLE_SIZES
 * (default 1000,1000000). Starts its own redis-server.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { Redis } from 'ioredis';
import { RunRegistry, receiptCountRedisKey, receiptRedisKey, runIndexRedisKey } from '../src/redis/index.js';
import { expandIncludes } from '../src/redis/scripts/scripts.js';
import { startConsoleServer } from '../src/console/index.js';
import { startRedis } from '../test/support/redis.js';
import { median, redisVersion } from './support.js';

const env = (name: string, fallback: string) => process.env[name] ?? fallback;
const SIZES = env('BENCH_CONSOLE_SIZES', '1000,1000000').split(',').map(Number);
const RUNS = Number(env('BENCH_CONSOLE_RUNS', '1000'));
const ROUNDS = Number(env('BENCH_CONSOLE_ROUNDS', '5'));
const TENANTS = 50;

type Loader = Redis & { loadReceipts(...args: (string | number)[]): Promise<number> };

/** Receipt `i` of run `run`: the first of every hundredth run ambiguous, the rest completed. */
const stateOf = (run: number, i: number) => (i === 0 && run % 100 === 7 ? 'a' : 'c');

async function load(redis: Loader, prefix: string, runs: number, perRun: number): Promise<void> {
  const registry = new RunRegistry(redis, prefix);
  for (let start = 0; start < runs; start += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, runs - start) }, async (_, j) => {
        const run = start + j;
        const tenantId = `tenant-${run % TENANTS}`;
        const runId = `run-${run}`;
        await registry.register(tenantId, runId);
        const keys = [runIndexRedisKey(prefix, tenantId, runId), receiptCountRedisKey(prefix, tenantId, runId)];
        let states = '';
        for (let i = 0; i < perRun; i++) {
          const argsHash = createHash('sha256').update(`${run}/${i}`).digest('hex');
          keys.push(receiptRedisKey(prefix, { tenantId, runId, toolName: i % 2 === 0 ? 'send_email' : 'charge_card', argsHash }));
          states += stateOf(run, i);
        }
        await redis.loadReceipts(keys.length, ...keys, tenantId, runId, 'send_email', 3_600_000, states, 'o'.repeat(perRun));
      }),
    );
  }
}

async function timePage(url: string, rounds: number): Promise<{ ms: number; status: number; bytes: number }> {
  const times: number[] = [];
  let status = 0;
  let bytes = 0;
  for (let i = 0; i < rounds + 1; i++) {
    const t = performance.now();
    const res = await fetch(url);
    const body = await res.text();
    if (i > 0) times.push(performance.now() - t); // the first warms the connection and the scripts
    status = res.status;
    bytes = body.length;
  }
  return { ms: median(times), status, bytes };
}

async function main(): Promise<void> {
  const handle = await startRedis();
  const redis = new Redis(handle.url) as Loader;
  const includes = new URL('../lua/includes/', import.meta.url);
  redis.defineCommand('loadReceipts', {
    lua: expandIncludes('load-receipts.lua', readFileSync(new URL('./load-receipts.lua', import.meta.url), 'utf8'), (name) =>
      readFileSync(new URL(`${name}.lua`, includes), 'utf8'),
    ),
  });
  console.log(
    `console bench — redis ${await redisVersion(redis)}, node ${process.versions.node}, load ${(loadavg()[0] ?? 0).toFixed(1)}; ${RUNS} runs, median of ${ROUNDS}`,
  );
  const results: Record<string, Record<number, number>> = {};
  try {
    for (const size of SIZES) {
      const prefix = `${handle.prefix}s${size}`;
      const runs = RUNS;
      const perRun = Math.max(1, Math.round(size / runs));
      const t = performance.now();
      await load(redis, prefix, runs, perRun);
      const loaded = ((performance.now() - t) / 1000).toFixed(1);
      const server = await startConsoleServer({ redis, prefix, port: 0 });
      const someKey = receiptRedisKey(prefix, {
        tenantId: 'tenant-3',
        runId: 'run-3',
        toolName: 'send_email',
        argsHash: createHash('sha256').update('3/0').digest('hex'),
      });
      const pages: [string, string][] = [
        ['needs a person', ''],
        ['needs a person, page 2', `?after=${encodeURIComponent(`0~${prefix}`)}`],
        ['needs a person, one tenant', '?tenant=tenant-3'],
        ['receipt', `receipt?key=${encodeURIComponent(someKey)}`],
        ['run', 'run?tenant=tenant-3&run=run-3'],
        ['find: receipt key', `find?q=${encodeURIComponent(someKey)}`],
        ['find: tenant', 'find?q=tenant-3'],
        ['bulk preview, one tenant', 'bulk?preview=1&tenant=tenant-3'],
        ['counts', 'counts'],
        ['audit log', 'audit'],
      ];
      console.log(
        `  ${size.toLocaleString('en-US')} receipts in ${runs.toLocaleString('en-US')} runs (loaded in ${loaded} s, ${(await redis.dbsize()).toLocaleString('en-US')} keys on the server):`,
      );
      for (const [name, path] of pages) {
        const { ms, status, bytes } = await timePage(server.url + path, ROUNDS);
        (results[name] ??= {})[size] = ms;
        console.log(`    ${name.padEnd(28)} ${ms.toFixed(1).padStart(8)} ms  (HTTP ${status}, ${bytes.toLocaleString('en-US')} bytes)`);
      }
      await server.close();
    }
    if (SIZES.length >= 2) {
      const [small, large] = [SIZES[0]!, SIZES[SIZES.length - 1]!];
      console.log(`  ratio ${large.toLocaleString('en-US')} / ${small.toLocaleString('en-US')} receipts:`);
      for (const [name, bySize] of Object.entries(results))
        console.log(`    ${name.padEnd(28)} x${(bySize[large]! / bySize[small]!).toFixed(1)}`);
    }
  } finally {
    redis.disconnect();
    await handle.stop();
  }
}

await main();
