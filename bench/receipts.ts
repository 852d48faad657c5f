/**
 * Receipt store throughput and footprint.
 *
 * Measures claim + complete through ReceiptStore against the same two Lua
 * scripts (claim-4 and complete-4, with the same four keys: receipt, run
 * index, breaker hash and counting set) sent as raw EVALSHA with precomputed arguments, in
 * the same run and on the same connection, so the ratio is the cost of the TypeScript layer
 * (decision, parsing, JSON) over the bare scripts. Then prints MEMORY USAGE of
 * one settled receipt.
 *
 * Starts its own redis-server on a free port (or uses REDIS_URL, touching only
 * its own prefix). Tunables: BENCH_CALLS (default 10000), BENCH_CONCURRENCY
 * (default 64), BENCH_ROUNDS (default 5). Rounds alternate store and raw, and
 * the ratio is the median of each round's pair, which damps noise from other
 * load on the machine.
 */
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { breakerField, breakerRedisKey, receiptCountRedisKey, receiptRedisKey, runIndexRedisKey } from '../src/redis/keys.js';
import { ReceiptStore } from '../src/redis/receipts/store.js';
import { scriptSource } from '../src/redis/scripts/scripts.js';
import { startRedis } from '../test/support/redis.js';
import { median, redisVersion, throughput, unlinkMatching } from './support.js';

const CALLS = Number(process.env.BENCH_CALLS ?? 10_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const RETENTION_MS = 86_400_000;
const LEASE_MS = 30_000;

const sha1 = (text: string): string => createHash('sha1').update(text).digest('hex');

async function main(): Promise<void> {
  const handle = await startRedis();
  const redis = new Redis(handle.url);
  const prefix = `${handle.prefix}:bench`;
  try {
    const store = new ReceiptStore({ redis, prefix, leaseMs: LEASE_MS, retentionMs: RETENTION_MS, owner: 'bench' });
    const claimLua = scriptSource('claim-4.lua');
    const completeLua = scriptSource('complete-4.lua');
    const claimSha = sha1(claimLua);
    const completeSha = sha1(completeLua);
    await redis.script('LOAD', claimLua);
    await redis.script('LOAD', completeLua);

    const result = { ok: true, messageId: 'msg-0000000000' };
    const resultJson = JSON.stringify(result);
    const keyOf = (phase: string, round: number, i: number) => ({
      tenantId: 'tenant-1',
      runId: `run-${phase}-${round}-${i % 100}`,
      toolName: 'send_email',
      argsHash: createHash('sha256').update(`${phase}:${round}:${i}`).digest('hex'),
    });

    const viaStore = (round: number) => async (i: number) => {
      const key = keyOf('store', round, i);
      const claim = await store.claim(key, { effect: 'opaque' });
      if (claim.fence === undefined) throw new Error(`unexpected ${claim.decision.kind}`);
      await store.complete(key, claim.fence, result);
    };
    const viaRaw = (round: number) => async (i: number) => {
      const key = keyOf('raw', round, i);
      const keys = [
        receiptRedisKey(prefix, key),
        runIndexRedisKey(prefix, key.tenantId, key.runId),
        breakerRedisKey(prefix, key.tenantId, key.runId),
        receiptCountRedisKey(prefix, key.tenantId, key.runId),
      ];
      const rejections = breakerField(key.toolName, 'rejections');
      const claimed = (await redis.evalsha(
        claimSha,
        4,
        ...keys,
        LEASE_MS,
        RETENTION_MS,
        'bench',
        'opaque',
        key.tenantId,
        key.runId,
        key.toolName,
        key.argsHash,
        breakerField(key.toolName, 'removed'),
        rejections,
        `e${i}`,
      )) as unknown[];
      if (claimed[0] !== 1) throw new Error('raw claim did not create');
      await redis.evalsha(completeSha, 4, ...keys, 1, resultJson, RETENTION_MS, rejections, `e${i}`);
    };

    // Warm-up: JIT, connection, script cache.
    await throughput(2_000, CONCURRENCY, viaStore(-1));
    await throughput(2_000, CONCURRENCY, viaRaw(-1));

    const storeRates: number[] = [];
    const rawRates: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      storeRates.push(await throughput(CALLS, CONCURRENCY, viaStore(round)));
      rawRates.push(await throughput(CALLS, CONCURRENCY, viaRaw(round)));
    }

    const settled = keyOf('store', 0, 42);
    const receiptBytes = await redis.call('MEMORY', 'USAGE', store.redisKey(settled), 'SAMPLES', '0');
    const fields = await redis.hlen(store.redisKey(settled));
    const version = await redisVersion(redis);

    const s = median(storeRates);
    const r = median(rawRates);
    console.log(`receipts bench — redis ${version}, ${CALLS} calls x ${ROUNDS} rounds, ${CONCURRENCY} in flight on one connection`);
    console.log(
      `  ReceiptStore claim+complete : ${s.toFixed(0).padStart(8)} calls/s  (rounds: ${storeRates.map((x) => x.toFixed(0)).join(', ')})`,
    );
    console.log(
      `  raw EVALSHA claim+complete  : ${r.toFixed(0).padStart(8)} calls/s  (rounds: ${rawRates.map((x) => x.toFixed(0)).join(', ')})`,
    );
    const ratios = storeRates.map((x, i) => x / (rawRates[i] ?? x));
    console.log(
      `  ratio store / raw           : ${median(ratios).toFixed(2)}  (median of per-round ratios: ${ratios.map((x) => x.toFixed(2)).join(', ')})`,
    );
    console.log(
      `  MEMORY USAGE settled receipt: ${String(receiptBytes)} bytes (${fields} fields, result ${resultJson.length} bytes of JSON)`,
    );
    console.log(`  key: ${store.redisKey(settled)}`);
  } finally {
    if (!handle.controllable) {
      // A shared server: remove only what this run wrote.
      await unlinkMatching(redis, `${prefix}:*`);
    }
    redis.disconnect();
    await handle.stop();
  }
}

await main();
