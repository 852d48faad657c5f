/**
 * Redis memory per settled receipt, against the peer's record of the same result.
 *
 * Settles BENCH_MEMORY_RECEIPTS (default 20,000) receipts in BENCH_MEMORY_RUNS
 * (default 2,000) runs through the real ReceiptStore (claim, then complete with
 * a result of about 300 bytes of JSON), and as many records through the peer
 * (Powertools' `makeIdempotent` over Redis, bench/peer.ts) with the same
 * results, each side on a fresh prefix of one throwaway Redis, and divides the
 * `used_memory` each side added by the number of calls: receipts, run indexes,
 * counting sets and the run registry included. Prints the ratio against the
 * goal (≤ 2×), then where a receipt's bytes go (MEMORY USAGE and encoding of
 * one receipt hash, of a run index and a counting set per receipt, of the
 * registry per run).
 *
 * Each result size again with receiptLayout: 4 (receipts without the fields
 * that repeat their key). Then all of it on the same server with its listpack limits raised
 * (LISTPACK_SETTINGS in bench/support.ts, docs/redis.md#memory): the layout
 * unchanged, its hashes and sorted sets kept compact.
 *
 * Starts its own redis-server (or uses REDIS_URL; then other clients' writes
 * land in the delta too, so prefer a server of its own).
 */
import { Redis } from 'ioredis';
import { toolCallArgsHash } from '../src/core/identity.js';
import { receiptCountRedisKey, runIndexRedisKey } from '../src/redis/keys.js';
import { ReceiptStore } from '../src/redis/receipts/store.js';
import type { ReceiptLayout } from '../src/redis/settings.js';
import { startRedis } from '../test/support/redis.js';
import { peerIdempotent } from './peer.js';
import { applySettings, LISTPACK_SETTINGS, realisticResult, redisVersion, serverSettings, throughput, unlinkMatching } from './support.js';

const RECEIPTS = Number(process.env['BENCH_MEMORY_RECEIPTS'] ?? 20_000);
const RUNS = Number(process.env['BENCH_MEMORY_RUNS'] ?? 2_000);
const CONCURRENCY = 32;
const RETENTION_MS = 86_400_000;
const LEASE_MS = 30_000;
const GOAL = 2;

/** One call of the bench: call i of run i % RUNS. */
function callOf(i: number) {
  return {
    tenantId: 'tenant-1',
    runId: `run-${i % RUNS}`,
    toolName: 'send_email',
    input: { to: `user${i}@example.com`, n: i },
  };
}

async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  return Number(/^used_memory:(\d+)/m.exec(info)?.[1] ?? 0);
}

/** Set by main: on a server of the bench's own, each side starts from an empty keyspace. */
let ownServer = false;

/**
 * `used_memory` after minus before `fill`, per call, after letting lazy frees and rehashing settle. On a
 * server of its own the keyspace is flushed first, so neither side pays for the key dictionary's growth
 * to hold the other's keys (a doubling of its buckets lands on whichever side crosses it).
 */
async function bytesPerCall(redis: Redis, fill: () => Promise<void>): Promise<number> {
  if (ownServer) await redis.flushall('SYNC');
  await new Promise((r) => setTimeout(r, 200));
  const before = await usedMemory(redis);
  await fill();
  await new Promise((r) => setTimeout(r, 200));
  return ((await usedMemory(redis)) - before) / RECEIPTS;
}

const memoryUsage = async (redis: Redis, key: string) => Number(await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));

/** What one side of one result size added, and the keys to break it down. */
interface SizeRun {
  readonly label: string;
  readonly resultBytes: number;
  readonly ours: number;
  readonly theirs: number;
  readonly breakdown: readonly string[];
}

async function measureSize(
  redis: Redis,
  prefix: string,
  label: string,
  resultOf: (i: number) => unknown,
  receiptLayout: ReceiptLayout = 2,
): Promise<SizeRun> {
  const store = new ReceiptStore({ redis, prefix, leaseMs: LEASE_MS, retentionMs: RETENTION_MS, owner: 'bench', receiptLayout });
  const peer = peerIdempotent(redis, `${prefix}:peer`, { retentionSeconds: RETENTION_MS / 1000, leaseMs: LEASE_MS }, (call) =>
    resultOf((call.input as { n: number }).n),
  );
  const keyOf = async (i: number) => {
    const call = callOf(i);
    return { tenantId: call.tenantId, runId: call.runId, toolName: call.toolName, argsHash: await toolCallArgsHash(call.input) };
  };
  const ours = await bytesPerCall(redis, async () => {
    await throughput(RECEIPTS, CONCURRENCY, async (i) => {
      const key = await keyOf(i);
      const claim = await store.claim(key, { effect: 'opaque' });
      if (claim.fence === undefined) throw new Error(`unexpected ${claim.decision.kind}`);
      await store.complete(key, claim.fence, resultOf(i));
    });
  });
  const sample = callOf(42);
  const receiptKey = store.redisKey(await keyOf(42));
  const indexKey = runIndexRedisKey(prefix, sample.tenantId, sample.runId);
  const countKey = receiptCountRedisKey(prefix, sample.tenantId, sample.runId);
  const perRun = RECEIPTS / RUNS;
  const encoding = async (key: string) => String(await redis.call('OBJECT', 'ENCODING', key));
  const registry: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:runs:*`, 'COUNT', 1000);
    cursor = next;
    registry.push(...keys);
  } while (cursor !== '0');
  let registryBytes = 0;
  for (const key of registry) registryBytes += await memoryUsage(redis, key);
  const breakdown = [
    `receipt hash             ${String(await memoryUsage(redis, receiptKey)).padStart(6)} B  ${await encoding(receiptKey)}, ` +
      `${await redis.hlen(receiptKey)} fields`,
    `run index per receipt    ${((await memoryUsage(redis, indexKey)) / perRun).toFixed(0).padStart(6)} B  ${await encoding(indexKey)}, ` +
      `member ${receiptKey.length} bytes`,
    `counting set per receipt ${((await memoryUsage(redis, countKey)) / perRun).toFixed(0).padStart(6)} B  ${await encoding(countKey)}, ` +
      `${await redis.zcard(countKey)} members for ${perRun} receipts`,
    `registry per receipt     ${(registryBytes / RECEIPTS).toFixed(0).padStart(6)} B  ${registry.length} shard(s)`,
  ];
  const theirs = await bytesPerCall(redis, async () => {
    await throughput(RECEIPTS, CONCURRENCY, async (i) => {
      const call = callOf(i);
      await peer({ tenantId: call.tenantId, runId: call.runId, name: call.toolName, input: call.input });
    });
  });

  const [, peerKeys] = await redis.scan('0', 'MATCH', `${prefix}:peer*`, 'COUNT', 1000);
  const peerKey = peerKeys[0];
  if (peerKey !== undefined) {
    breakdown.push(
      `peer record              ${String(await memoryUsage(redis, peerKey)).padStart(6)} B  ${await encoding(peerKey)}, ` +
        `${await redis.strlen(peerKey)} bytes of value`,
    );
  }
  return { label, resultBytes: JSON.stringify(resultOf(42)).length, ours, theirs, breakdown };
}

async function main(): Promise<void> {
  const handle = await startRedis();
  const redis = new Redis(handle.url);
  ownServer = handle.controllable;
  try {
    // Warm the connection and the script cache on keys the deltas do not count.
    const warm = new ReceiptStore({ redis, prefix: `${handle.prefix}:warm`, leaseMs: LEASE_MS, retentionMs: RETENTION_MS, owner: 'bench' });
    await warm.claim(
      { tenantId: 'warm', runId: 'warm', toolName: 'send_email', argsHash: await toolCallArgsHash({}) },
      { effect: 'opaque' },
    );
    const small = (i: number) => ({ ok: true, messageId: `msg-${String(i).padStart(10, '0')}` });
    const runs = [
      await measureSize(redis, `${handle.prefix}:real`, 'realistic result', realisticResult),
      await measureSize(redis, `${handle.prefix}:small`, "small result (the queue bench's)", small),
      await measureSize(redis, `${handle.prefix}:real-4`, 'realistic result, receiptLayout: 4', realisticResult, 4),
      await measureSize(redis, `${handle.prefix}:small-4`, 'small result, receiptLayout: 4', small, 4),
    ];
    // The same layout on a server whose listpack limits a deployment raised (docs/redis.md#memory); a server
    // that refuses CONFIG SET (a managed one, REDIS_URL) is measured with its own settings only.
    const own = await serverSettings(redis, Object.keys(LISTPACK_SETTINGS));
    const tuned = Object.entries(LISTPACK_SETTINGS)
      .map(([name, value]) => `${name} ${value}`)
      .join(', ');
    try {
      await applySettings(redis, LISTPACK_SETTINGS);
      runs.push(await measureSize(redis, `${handle.prefix}:real-lp`, `realistic result, server set to ${tuned}`, realisticResult));
      runs.push(await measureSize(redis, `${handle.prefix}:small-lp`, `small result, server set to ${tuned}`, small));
      runs.push(
        await measureSize(redis, `${handle.prefix}:real-lp-4`, `realistic result, receiptLayout: 4, server set so`, realisticResult, 4),
      );
      runs.push(await measureSize(redis, `${handle.prefix}:small-lp-4`, `small result, receiptLayout: 4, server set so`, small, 4));
    } catch (err) {
      console.log(`  (no pass with raised listpack limits: CONFIG SET was refused: ${String(err)})`);
    } finally {
      await applySettings(redis, own).catch(() => undefined);
    }
    console.log(
      `memory bench — redis ${await redisVersion(redis)}, ${RECEIPTS} calls settled in ${RUNS} runs each side, ` +
        `each side on a fresh prefix; used_memory delta / calls (receipt, run index, counting set, registry included)`,
    );
    for (const run of runs) {
      const ratio = run.ours / run.theirs;
      console.log(
        `  ${run.label}, ${run.resultBytes} bytes of JSON: ours ${run.ours.toFixed(0)} B per receipt, ` +
          `peer ${run.theirs.toFixed(0)} B per record; ours / peer ${ratio.toFixed(2)}× ` +
          `(goal ≤ ${GOAL}×: ${ratio <= GOAL ? 'met' : 'missed'}; ≤ ${(run.theirs * GOAL).toFixed(0)} B would meet it)`,
      );
      for (const line of run.breakdown) console.log(`    ${line}`);
    }
  } finally {
    if (!handle.controllable) await unlinkMatching(redis, `${handle.prefix}:*`);
    redis.disconnect();
    await handle.stop();
  }
}

await main();
