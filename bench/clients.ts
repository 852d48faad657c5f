/**
 * The receipt store through each Redis client the library accepts, side by
 * side: claim + complete of fresh calls through ReceiptStore on ioredis 5,
 * ioredis 6, node-redis 6 (RESP3, its default) and node-redis 5 (RESP2),
 * against the same server in the same run. Rounds rotate through the
 * clients so load from elsewhere on the machine falls on each alike; the
 * figures are medians over rounds of throughput and of per-call latency
 * (p50, p99), with BENCH_CONCURRENCY calls in flight on one connection each.
 *
 * Starts its own redis-server (or uses REDIS_URL, touching only its own
 * prefix). Tunables: BENCH_CLIENT_CALLS (default 5000), BENCH_CONCURRENCY
 * (default 64), BENCH_ROUNDS (default 5).
 */
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { ReceiptStore } from '../src/redis/receipts/store.js';
import { CLIENT_KINDS, openSingle, type ClientKind } from '../test/support/redis-clients.js';
import { startRedis } from '../test/support/redis.js';
import { median, redisVersion, unlinkMatching } from './support.js';

const CALLS = Number(process.env.BENCH_CLIENT_CALLS ?? 5_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

/** Runs `op(0..count-1)` with at most `concurrency` in flight: calls per second and each call's latency in ms. */
async function measure(
  count: number,
  concurrency: number,
  op: (i: number) => Promise<void>,
): Promise<{ rate: number; latencies: number[] }> {
  let next = 0;
  const latencies: number[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        const t = performance.now();
        await op(i);
        latencies.push(performance.now() - t);
      }
    }),
  );
  return { rate: count / ((performance.now() - started) / 1000), latencies };
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

async function main(): Promise<void> {
  const handle = await startRedis();
  const admin = new Redis(handle.url);
  const prefix = `${handle.prefix}:clients`;
  const opened = CLIENT_KINDS.map((kind) => ({ kind, ...openSingle(kind, handle.url) }));
  try {
    const stores = new Map<ClientKind, ReceiptStore>(
      opened.map(({ kind, client }) => [kind, new ReceiptStore({ redis: client, prefix: `${prefix}:${kind}`, owner: 'bench' })]),
    );
    const result = { ok: true, messageId: 'msg-0000000000' };
    const op = (kind: ClientKind, round: number) => async (i: number) => {
      const store = stores.get(kind)!;
      const key = {
        tenantId: 'tenant-1',
        runId: `run-${round}-${i % 100}`,
        toolName: 'send_email',
        argsHash: createHash('sha256').update(`${kind}:${round}:${i}`).digest('hex'),
      };
      const claim = await store.claim(key, { effect: 'opaque' });
      if (claim.fence === undefined) throw new Error(`unexpected ${claim.decision.kind}`);
      await store.complete(key, claim.fence, result);
    };
    for (const { kind } of opened) await measure(1_000, CONCURRENCY, op(kind, -1)); // warm-up

    const figures = new Map<ClientKind, { rates: number[]; p50: number[]; p99: number[] }>(
      CLIENT_KINDS.map((k) => [k, { rates: [], p50: [], p99: [] }]),
    );
    for (let round = 0; round < ROUNDS; round++) {
      // Rotate the order each round, so no client always runs first.
      const order = CLIENT_KINDS.map((_, i) => CLIENT_KINDS[(i + round) % CLIENT_KINDS.length]!);
      for (const kind of order) {
        const { rate, latencies } = await measure(CALLS, CONCURRENCY, op(kind, round));
        const f = figures.get(kind)!;
        f.rates.push(rate);
        f.p50.push(percentile(latencies, 50));
        f.p99.push(percentile(latencies, 99));
      }
    }

    console.log(
      `receipts by client — redis ${await redisVersion(admin)}, ${CALLS} claim+complete x ${ROUNDS} rounds, ${CONCURRENCY} in flight on one connection per client (medians)`,
    );
    const base = median(figures.get('ioredis-5')!.rates);
    for (const kind of CLIENT_KINDS) {
      const f = figures.get(kind)!;
      const rate = median(f.rates);
      console.log(
        `  ${kind.padEnd(13)}: ${rate.toFixed(0).padStart(7)} calls/s  x${(rate / base).toFixed(2)} of ioredis 5   ` +
          `p50 ${median(f.p50).toFixed(2)} ms  p99 ${median(f.p99).toFixed(2)} ms  (rounds: ${f.rates.map((x) => x.toFixed(0)).join(', ')})`,
      );
    }
  } finally {
    if (!handle.controllable) await unlinkMatching(admin, `${prefix}:*`);
    await Promise.all(opened.map((c) => c.close()));
    admin.disconnect();
    await handle.stop();
  }
}

await main();
