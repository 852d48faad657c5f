/**
 * What exactly once costs a transactional tool: BullMQ jobs whose one call
 * is a transactional no-op tool (one INSERT through `ctx.tx`, committed with
 * its outcome row, then the receipt completed on Redis) against jobs whose
 * processor runs the same INSERT in a plain transaction (BEGIN, INSERT,
 * COMMIT on a pooled node-postgres client) with no receipts at all. Jobs/s
 * and per-job latency (the processor's time) at concurrency 1 and 50, in
 * the same run, rounds rotating the two sides; ratios are the median of
 * per-round ratios, transactional over plain.
 *
 * Receipts and queues on REDIS_URL (run-all passes its server; without it a
 * throwaway one is started); a throwaway PostgreSQL cluster of its own, or
 * a skip saying why there is none.
 *
 * Tunables: BENCH_TX_JOBS_C1 (default 300), BENCH_TX_JOBS_C50 (default 1500),
 * BENCH_TX_ROUNDS (default 3).
 */
import { loadavg } from 'node:os';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { pino } from 'pino';
import { z } from 'zod';
import { built, builtTransactional } from './package.js';
import { postgresSkipReason, startPostgres } from '../test/support/postgres.js';
import { startRedis, uniquePrefix } from '../test/support/redis.js';
import { drainJobs, median, rate, unlinkMatching } from './support.js';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const { defineTool, withToolReceipts } = built;
const { applyOutcomeTable, pgDatabase } = builtTransactional;
const INSERT = 'INSERT INTO bench_rows (call) VALUES ($1)';

/** The p-th percentile (0..1) of `values`. */
const percentile = (values: readonly number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))] ?? 0;

type Side = 'plain' | 'transactional';
type Processor = (job: Job, token: string | undefined, signal?: AbortSignal) => Promise<unknown>;

/** The plain side: the INSERT in a transaction of its own, nothing else. */
function plainProcessor(pool: pg.Pool): Processor {
  return async (job) => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(INSERT, [job.data.calls[0].id]);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
    return { ok: true };
  };
}

/** The transactional side: the same INSERT as a transactional tool under the wrapper. */
function transactionalProcessor(pool: pg.Pool, redis: Redis, prefix: string): Processor {
  const tool = defineTool({
    name: 'record_row',
    input: z.object({ n: z.number().int() }),
    effect: 'transactional',
    destructive: false,
    database: pgDatabase(pool),
    async execute(_args, ctx) {
      await ctx.tx.query(INSERT, [ctx.callId]);
      return { ok: true };
    },
  });
  return withToolReceipts({ redis, tools: [tool], prefix, logger: pino({ level: 'silent' }) });
}

async function pass(url: string, prefix: string, pool: pg.Pool, side: Side, concurrency: number, jobs: number, tag: string) {
  const connection = { host: new URL(url).hostname, port: Number(new URL(url).port), maxRetriesPerRequest: null };
  const receipts = new Redis(url, { maxRetriesPerRequest: null });
  const inner = side === 'plain' ? plainProcessor(pool) : transactionalProcessor(pool, receipts, `${prefix}:trc`);
  const latencies: number[] = [];
  const timed: Processor = async (job, token, signal) => {
    const started = performance.now();
    const result = await inner(job, token, signal);
    latencies.push(performance.now() - started);
    return result;
  };
  // Runs and call ids unique to the pass, so every transactional call executes (none replays).
  const queueName = `tx-${side}-c${concurrency}-${tag}`;
  const queue = new Queue(queueName, { connection, prefix: `${prefix}:bull` });
  await queue.addBulk(
    Array.from({ length: jobs }, (_, i) => ({
      name: 'call',
      data: {
        tenantId: 'bench',
        runId: `run-${queueName}-${i % 100}`,
        calls: [{ id: `${queueName}-${i}`, name: 'record_row', input: { n: i } }],
      },
      opts: { removeOnComplete: true, removeOnFail: true },
    })),
  );
  const worker = new Worker(queueName, timed, { connection, prefix: `${prefix}:bull`, concurrency, autorun: false });
  try {
    const seconds = await drainJobs(worker, jobs, `${side} at c=${concurrency}`);
    return { rate: jobs / seconds, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) };
  } finally {
    await worker.close();
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    receipts.disconnect();
  }
}

async function main(): Promise<number> {
  const skip = postgresSkipReason();
  if (skip !== undefined) {
    console.log(`transactional bench skipped: ${skip}`);
    return 0;
  }
  const ownRedis = process.env['REDIS_URL'] ? undefined : await startRedis();
  const url = process.env['REDIS_URL'] ?? ownRedis!.url;
  const prefix = `${uniquePrefix()}:tx`;
  const postgres = await startPostgres();
  // 50 connections for c=50, shared by both sides (the pg pool is the app's, not the wrapper's).
  const pool = new pg.Pool({ connectionString: postgres.url, max: 50 });
  pool.on('error', () => undefined);
  try {
    await pool.query('CREATE TABLE bench_rows (call text NOT NULL)');
    await applyOutcomeTable(pgDatabase(pool));
    const rounds = env('BENCH_TX_ROUNDS', 3);
    const levels = [
      [1, env('BENCH_TX_JOBS_C1', 300)],
      [50, env('BENCH_TX_JOBS_C50', 1500)],
    ] as const;
    const sides: Side[] = ['plain', 'transactional'];
    console.log(
      `transactional bench — one INSERT per job: a transactional tool (outcome row + receipt) vs a plain transaction without receipts, ` +
        `${rounds} rounds rotating the sides, medians, load ${(loadavg()[0] ?? 0).toFixed(1)}`,
    );
    console.log('  level  side            jobs/s  vs plain  job p50 ms  job p99 ms');
    for (const [concurrency, jobs] of levels) {
      for (const side of sides) await pass(url, prefix, pool, side, concurrency, Math.ceil(jobs / 3), 'warm'); // JIT, script cache, pool
      const figures = new Map(
        sides.map((s) => [s, { rates: [] as number[], ratios: [] as number[], p50: [] as number[], p99: [] as number[] }]),
      );
      for (let r = 0; r < rounds; r++) {
        const order = sides.map((_, i) => sides[(i + r) % sides.length]!);
        const results = new Map<Side, Awaited<ReturnType<typeof pass>>>();
        for (const side of order) results.set(side, await pass(url, prefix, pool, side, concurrency, jobs, `r${r}`));
        const plain = results.get('plain')!.rate;
        for (const [side, result] of results) {
          const f = figures.get(side)!;
          f.rates.push(result.rate);
          f.ratios.push(result.rate / plain);
          f.p50.push(result.p50);
          f.p99.push(result.p99);
        }
      }
      for (const side of sides) {
        const f = figures.get(side)!;
        console.log(
          `  c=${String(concurrency).padEnd(4)} ${side.padEnd(13)} ${rate(median(f.rates), 9)} ${median(f.ratios).toFixed(2).padStart(9)} ` +
            `${median(f.p50).toFixed(2).padStart(11)} ${median(f.p99).toFixed(2).padStart(11)}`,
        );
      }
    }
    return 0;
  } finally {
    await pool.end();
    await postgres.stop();
    if (ownRedis) await ownRedis.stop();
    else {
      const admin = new Redis(url);
      await unlinkMatching(admin, `${prefix}:*`);
      admin.disconnect();
    }
  }
}

process.exitCode = await main();
