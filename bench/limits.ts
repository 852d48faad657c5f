/**
 * The claim with one limit, and with one in-flight cap, against the claim
 * without (`npx tsx bench/limits.ts`, or step 7 of `npm run bench`): three
 * wrappers of the package build on one throwaway Redis (or REDIS_URL), one
 * with a tenant limit (too large to refuse anything) covering its tool, one
 * with a tenant cap of 1,000 in flight (never full), one without. Each
 * pass runs fresh one-call jobs through the processor (real BullMQ Job
 * objects, never enqueued) at concurrency 1 and 50, rounds alternating the
 * order (A B C, C B A, ...). A limited call adds a reserve before its claim,
 * a bind sent right behind the claim, and a commit after it (docs/limits.md):
 * three scripts, two of them on the limit's one key, which every call of the
 * tenant shares, and one more wait (the reserve's). A capped call adds a
 * slot's acquire before its claim and its release after the settle, both on
 * the cap's keys. Under group commit they join the batches in flight.
 * Prints calls/s and the median call's latency of each, and the ratio.
 * Tunables: BENCH_LIMIT_CALLS_C1 (default 400), BENCH_LIMIT_CALLS_C50
 * (default 2000), BENCH_LIMIT_ROUNDS (default 3).
 */
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { z } from 'zod';
import type { ToolJobData } from '../src/bullmq/job-data.js';
import { startRedis } from '../test/support/redis.js';
import { built } from './package.js';
import { median, redisVersion, throughput } from './support.js';

const CALLS = { 1: Number(process.env['BENCH_LIMIT_CALLS_C1'] ?? 400), 50: Number(process.env['BENCH_LIMIT_CALLS_C50'] ?? 2000) };
const ROUNDS = Number(process.env['BENCH_LIMIT_ROUNDS'] ?? 3);
const LEVELS = [1, 50] as const;

async function main(): Promise<void> {
  const handle = await startRedis();
  const admin = new Redis(handle.url);
  const queueConnection = new Redis(handle.url, { maxRetriesPerRequest: null, lazyConnect: true });
  const queue = new Queue('limits-bench', { connection: queueConnection, prefix: `${handle.prefix}:bull` });
  const connections: Redis[] = [];
  try {
    const tool = built.defineTool({
      name: 'send_email',
      input: z.object({ to: z.string(), n: z.number().int() }),
      effect: 'opaque',
      destructive: false,
      execute: () => ({ ok: true }),
    });
    const side = (name: 'without' | 'one limit' | 'one cap') => {
      const redis = new Redis(handle.url, { maxRetriesPerRequest: null });
      connections.push(redis);
      const limits =
        name === 'one limit'
          ? [{ name: 'emails', per: 'tenant' as const, max: 1_000_000_000, windowMs: 86_400_000 }]
          : name === 'one cap'
            ? [{ name: 'sending', per: 'tenant' as const, concurrency: 1_000 }]
            : undefined;
      const wrapped = built.withToolReceipts({
        redis,
        tools: [tool],
        prefix: `${handle.prefix}:${name.replace(' ', '-')}`,
        logger: pino({ level: 'silent' }),
        ...(limits ? { limits } : {}),
      });
      return { name, wrapped, rate: { 1: [] as number[], 50: [] as number[] }, latency: { 1: [] as number[], 50: [] as number[] } };
    };
    const sides = [side('without'), side('one limit'), side('one cap')];
    const pass = async (s: (typeof sides)[number], level: (typeof LEVELS)[number], tag: string, record: boolean) => {
      const jobs = Array.from({ length: CALLS[level] }, (_, i) => {
        const data: ToolJobData = {
          tenantId: 'bench',
          runId: `run-${tag}-${i % 100}`,
          calls: [{ id: `toolu_${tag}_${i}`, name: 'send_email', input: { to: 'user@example.com', n: i } }],
        };
        return new Job(queue, 'call', data, { attempts: 1 }, `${tag}-${i}`);
      });
      const each: number[] = [];
      const calls = await throughput(jobs.length, level, async (i) => {
        const t0 = performance.now();
        await s.wrapped(jobs[i]!, undefined, new AbortController().signal);
        each.push((performance.now() - t0) * 1000);
      });
      if (!record) return;
      s.rate[level].push(calls);
      s.latency[level].push(median(each));
    };
    for (const level of LEVELS) for (const s of sides) await pass(s, level, `warm-${s.name}-${level}`.replace(' ', '-'), false);
    for (let r = 0; r < ROUNDS; r++) {
      for (const level of LEVELS) {
        const order = r % 2 === 0 ? sides : [...sides].reverse();
        for (const s of order) await pass(s, level, `r${r}-${s.name}-${level}`.replace(' ', '-'), true);
      }
    }
    console.log(
      `limits bench — redis ${await redisVersion(admin)}, node ${process.versions.node}; the claim with one tenant limit, and with one ` +
        `in-flight cap, against without, ${CALLS[1]} (c=1) and ${CALLS[50]} (c=50) fresh one-call jobs per pass, ${ROUNDS} rounds, medians`,
    );
    const plain = sides[0]!;
    for (const level of LEVELS) {
      const rate = (s: typeof plain) => median(s.rate[level]);
      const lat = (s: typeof plain) => median(s.latency[level]);
      console.log(
        `  c=${String(level).padEnd(3)} without ${rate(plain).toFixed(0)} calls/s (median ${lat(plain).toFixed(0)} µs)` +
          sides
            .slice(1)
            .map(
              (s) =>
                `; ${s.name} ${rate(s).toFixed(0)} calls/s (median ${lat(s).toFixed(0)} µs), ` +
                `${(rate(s) / rate(plain)).toFixed(2)} of without in rate, ${(lat(s) / lat(plain)).toFixed(2)} in latency`,
            )
            .join(''),
      );
    }
  } finally {
    for (const redis of connections) redis.disconnect();
    queueConnection.disconnect();
    admin.disconnect();
    await handle.stop();
  }
}

await main();
