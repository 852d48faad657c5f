/**
 * Redis memory per settled receipt, against the peer's record of the same result.
 *
 * Settles BENCH_MEMORY_RECEIPTS (default 20,000) receipts in BENCH_MEMORY_RUNS
 * (default 2,000) runs through the real ReceiptStore (claim, then complete with
 * a small result of about 40 bytes of JSON, and again with a realistic one of
 * about 300), and as many records through the peer (Powertools'
 * `makeIdempotent` over Redis, bench/peer.ts) with the same results, each side
 * on a fresh prefix of one throwaway Redis, and divides the `used_memory` each
 * side added by the number of calls: receipts, run indexes, counting sets and
 * the run registry included.
 *
 * Each receipt layout of LAYOUTS (BENCH_MEMORY_LAYOUTS=2,4 picks some), at
 * the server's default listpack limits and again with them raised
 * (LISTPACK_SETTINGS in bench/support.ts, docs/redis.md#memory). Prints one
 * table row per layout × limits × result (ours, the peer, the ratio against
 * the goal of ≤ 2×, the encodings of the receipt hashes, run indexes and
 * counting sets), then where a receipt's bytes go (the doctor's own memory
 * sample, bench/memory-report.ts). A layout this release does not write is
 * shown as refused.
 *
 * Starts its own redis-server (or uses REDIS_URL; then other clients' writes
 * land in the delta too, so prefer a server of its own).
 */
import { Redis } from 'ioredis';
import { toolCallArgsHash } from '../src/core/identity.js';
import { receiptCountRedisKey, runIndexRedisKey } from '../src/redis/keys.js';
import { LOAD_AFTER_RUNS } from '../src/redis/connection/clients/functions.js';
import { ReceiptStore } from '../src/redis/receipts/store.js';
import { startRedis } from '../test/support/redis.js';
import { breakdownOf, memoryTables, peerRecordOf, type MemoryRow } from './memory-report.js';
import { peerIdempotent } from './peer.js';
import { applySettings, LISTPACK_SETTINGS, realisticResult, redisVersion, serverSettings, throughput, unlinkMatching } from './support.js';

const RECEIPTS = Number(process.env['BENCH_MEMORY_RECEIPTS'] ?? 20_000);
const RUNS = Number(process.env['BENCH_MEMORY_RUNS'] ?? 2_000);
const CONCURRENCY = 32;
const RETENTION_MS = 86_400_000;
const LEASE_MS = 30_000;
const GOAL = 2;

/** The receipt layouts measured: the default, the one without the fields its key names, the compact one. */
const LAYOUTS = [2, 4, 5] as const;

/** LAYOUTS, or the ones BENCH_MEMORY_LAYOUTS names (`2,4`). */
function layoutsToMeasure(): readonly (typeof LAYOUTS)[number][] {
  const asked = process.env['BENCH_MEMORY_LAYOUTS'];
  if (asked === undefined || asked === '') return LAYOUTS;
  const chosen = asked.split(',').map((text) => LAYOUTS.find((layout) => String(layout) === text.trim()));
  if (chosen.some((layout) => layout === undefined)) throw new Error(`BENCH_MEMORY_LAYOUTS: ${asked}; known: ${LAYOUTS.join(',')}`);
  return chosen as (typeof LAYOUTS)[number][];
}

/** The two result sizes: the queue bench's small one and an email API's answer. */
const RESULTS: readonly { readonly name: string; readonly of: (i: number) => unknown }[] = [
  { name: 'small', of: (i) => ({ ok: true, messageId: `msg-${String(i).padStart(10, '0')}` }) },
  { name: 'realistic', of: realisticResult },
];

/** One call of the bench: call i of run i % RUNS. */
function callOf(i: number) {
  return {
    tenantId: 'tenant-1',
    runId: `run-${i % RUNS}`,
    toolName: 'send_email',
    input: { to: `user${i}@example.com`, n: i },
  };
}

async function keyOf(i: number) {
  const call = callOf(i);
  return { tenantId: call.tenantId, runId: call.runId, toolName: call.toolName, argsHash: await toolCallArgsHash(call.input) };
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

/** The peer's bytes per record for one result size, and one record's breakdown. */
async function measurePeer(redis: Redis, prefix: string, resultOf: (i: number) => unknown): Promise<{ peer: number; peerRecord: string }> {
  const peer = peerIdempotent(redis, `${prefix}:peer`, { retentionSeconds: RETENTION_MS / 1000, leaseMs: LEASE_MS }, (call) =>
    resultOf((call.input as { n: number }).n),
  );
  const bytes = await bytesPerCall(redis, async () => {
    await throughput(RECEIPTS, CONCURRENCY, async (i) => {
      const call = callOf(i);
      await peer({ tenantId: call.tenantId, runId: call.runId, name: call.toolName, input: call.input });
    });
  });
  return { peer: bytes, peerRecord: await peerRecordOf(redis, `${prefix}:peer*`) };
}

/** Our bytes per receipt in `layout` and their breakdown, or why the store refused the layout. */
async function measureOurs(
  redis: Redis,
  prefix: string,
  layout: (typeof LAYOUTS)[number],
  resultOf: (i: number) => unknown,
): Promise<Pick<MemoryRow, 'ours' | 'breakdown' | 'refused'>> {
  let store: ReceiptStore;
  try {
    // A layout a build does not write is refused here (options.invalid), before anything is written.
    store = new ReceiptStore({ redis, prefix, leaseMs: LEASE_MS, retentionMs: RETENTION_MS, owner: 'bench', receiptLayout: layout });
  } catch (refusal) {
    return { refused: (refusal as { code?: string }).code ?? String(refusal) };
  }
  // The server keeps each script's text, and its library once loaded (FUNCTION LOAD, in the background once a script
  // has run LOAD_AFTER_RUNS times): once per server, not per receipt, so calls enough first, on a prefix the pass flushes.
  const warm = new ReceiptStore({ redis, prefix: `${prefix}:warm`, owner: 'bench', receiptLayout: layout });
  for (let i = 0; i <= LOAD_AFTER_RUNS; i++) {
    const key = await keyOf(RECEIPTS + i);
    const claim = await warm.claim(key, { effect: 'opaque' });
    await warm.complete(key, claim.fence!, resultOf(i));
    await new Promise((r) => setTimeout(r, 50));
  }
  const ours = await bytesPerCall(redis, async () => {
    await throughput(RECEIPTS, CONCURRENCY, async (i) => {
      const key = await keyOf(i);
      const claim = await store.claim(key, { effect: 'opaque' });
      if (claim.fence === undefined) throw new Error(`unexpected ${claim.decision.kind}`);
      await store.complete(key, claim.fence, resultOf(i));
    });
  });
  const sample = callOf(42);
  const breakdown = await breakdownOf(
    redis,
    prefix,
    {
      receipt: store.redisKey(await keyOf(42)),
      runIndex: runIndexRedisKey(prefix, sample.tenantId, sample.runId),
      countingSet: receiptCountRedisKey(prefix, sample.tenantId, sample.runId),
    },
    RECEIPTS,
  );
  return { ours, breakdown };
}

/** Every layout × result size under the server's current limits, named `limits`. */
async function measureAll(redis: Redis, prefix: string, limits: string): Promise<MemoryRow[]> {
  const rows: MemoryRow[] = [];
  for (const result of RESULTS) {
    const resultBytes = JSON.stringify(result.of(42)).length;
    const peer = await measurePeer(redis, `${prefix}:${limits}-${result.name}`, result.of);
    for (const layout of layoutsToMeasure()) {
      const ours = await measureOurs(redis, `${prefix}:${limits}-${result.name}-${layout}`, layout, result.of);
      rows.push({ layout, limits, result: result.name, resultBytes, ...peer, ...ours });
    }
  }
  return rows;
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
    const rows = await measureAll(redis, handle.prefix, 'default');
    // The same on a server whose listpack limits a deployment raised (docs/redis.md#memory); a server
    // that refuses CONFIG SET (a managed one, REDIS_URL) is measured with its own settings only.
    const own = await serverSettings(redis, Object.keys(LISTPACK_SETTINGS));
    const raised = Object.entries(LISTPACK_SETTINGS)
      .map(([name, value]) => `${name} ${value}`)
      .join(', ');
    let refusedRaise: string | undefined;
    try {
      await applySettings(redis, LISTPACK_SETTINGS);
      rows.push(...(await measureAll(redis, handle.prefix, 'raised')));
    } catch (err) {
      refusedRaise = String(err);
    } finally {
      await applySettings(redis, own).catch(() => undefined);
    }
    console.log(
      `memory bench — redis ${await redisVersion(redis)}, ${RECEIPTS} calls settled in ${RUNS} runs each side, each side on a fresh ` +
        'prefix; bytes = used_memory delta / calls (receipt, run index, counting set, registry included); limits default = ' +
        `${Object.entries(own)
          .map(([name, value]) => `${name} ${value}`)
          .join(', ')}, raised = ${raised}`,
    );
    if (refusedRaise !== undefined) console.log(`  (no pass with raised listpack limits: CONFIG SET was refused: ${refusedRaise})`);
    for (const line of memoryTables(rows, GOAL)) console.log(line === '' ? '' : `  ${line}`);
  } finally {
    if (!handle.controllable) await unlinkMatching(redis, `${handle.prefix}:*`);
    redis.disconnect();
    await handle.stop();
  }
}

await main();
