/**
 * What each durability mode costs: wrapped BullMQ jobs (one executed call
 * each, a no-op tool) on a primary with one replica, with durability off,
 * `{ replicas: 1 }`, and `{ replicas: 1, aof: true }` where the server has
 * WAITAOF (Redis ≥ 7.2). Jobs/s and per-call latency (the processor's time
 * per job, claim to settle) at concurrency 1 and 50, in the same run, with
 * rounds rotating the modes; ratios are against mode off.
 *
 * Starts its own primary (appendonly yes, appendfsync everysec, so the AOF
 * fsync is what WAITAOF adds) and replica from the local redis-server; with
 * REDIS_URL set or no binary it says why it is skipped.
 *
 * Tunables: BENCH_DURABILITY_JOBS_C1 (default 300), BENCH_DURABILITY_JOBS_C50
 * (default 1500), BENCH_DURABILITY_ROUNDS (default 3).
 */
import { loadavg } from 'node:os';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { z } from 'zod';
import { built } from './package.js';
import { hasWaitAof, type DurabilityOptions } from '../src/redis/durability/durability.js';
import { NO_SYNC_DELAY, clusterSkipReason, withNode } from '../test/support/redis-cluster.js';
import { LocalRedis, findOnPath } from '../test/support/redis-process.js';
import { uniquePrefix } from '../test/support/redis.js';
import { drainJobs, median, rate } from './support.js';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const { defineTool, withToolReceipts } = built;
const tool = defineTool({
  name: 'send_email',
  input: z.object({ n: z.number().int() }),
  effect: 'opaque',
  destructive: false,
  execute: () => ({ ok: true }),
});

interface Mode {
  readonly name: string;
  readonly durability: DurabilityOptions | undefined;
}

/** The p-th percentile (0..1) of `values`. */
const percentile = (values: readonly number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))] ?? 0;

async function pass(url: string, prefix: string, mode: Mode, concurrency: number, jobs: number, tag: string) {
  const connection = { host: new URL(url).hostname, port: Number(new URL(url).port), maxRetriesPerRequest: null };
  const receipts = new Redis(url, { maxRetriesPerRequest: null });
  const wrapped = withToolReceipts({
    redis: receipts,
    tools: [tool],
    prefix: `${prefix}:trc`,
    logger: pino({ level: 'silent' }),
    ...(mode.durability ? { durability: mode.durability } : {}),
  });
  const latencies: number[] = [];
  const outcomes: string[] = [];
  const timed = async (job: Job, token: string | undefined, signal?: AbortSignal) => {
    const started = performance.now();
    const result = await wrapped(job, token, signal);
    latencies.push(performance.now() - started);
    outcomes.push(result.results[0]?.outcome ?? 'none');
    return result;
  };
  // Runs unique to the pass, so every call executes (a run shared with another pass would replay).
  const queueName = `${mode.name.replace(/\W+/g, '-')}-c${concurrency}-${tag}`;
  const queue = new Queue(queueName, { connection, prefix: `${prefix}:bull` });
  await queue.addBulk(
    Array.from({ length: jobs }, (_, i) => ({
      name: 'call',
      data: { tenantId: 'bench', runId: `run-${queueName}-${i % 100}`, calls: [{ id: `toolu_${i}`, name: tool.name, input: { n: i } }] },
      opts: { removeOnComplete: true, removeOnFail: true },
    })),
  );
  const worker = new Worker(queueName, timed, { connection, prefix: `${prefix}:bull`, concurrency, autorun: false });
  try {
    const seconds = await drainJobs(worker, jobs, `${mode.name} at c=${concurrency}`);
    const replayed = outcomes.filter((o) => o !== 'executed').length;
    if (replayed > 0) throw new Error(`${mode.name} at c=${concurrency}: ${replayed} calls did not execute`);
    return { rate: jobs / seconds, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) };
  } finally {
    await worker.close();
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    receipts.disconnect();
  }
}

async function main(): Promise<number> {
  const skip = clusterSkipReason();
  if (skip !== undefined) {
    console.log(`durability bench skipped: ${skip} (it needs a primary and a replica of its own)`);
    return 0;
  }
  const binary = findOnPath('redis-server')!;
  const prefix = uniquePrefix();
  const primary = await LocalRedis.start(binary, { appendonly: true, appendfsync: 'everysec', extraArgs: NO_SYNC_DELAY }, prefix);
  const replica = await LocalRedis.start(
    binary,
    { appendonly: true, appendfsync: 'everysec', extraArgs: [...NO_SYNC_DELAY, '--replicaof', primary.host, String(primary.port)] },
    prefix,
  );
  try {
    const deadline = performance.now() + 15_000;
    while (!/master_link_status:up/.test(await withNode(replica, (a) => a.info('replication')))) {
      if (performance.now() > deadline) throw new Error('the replica did not link');
      await new Promise((r) => setTimeout(r, 50));
    }
    const waitAof = await withNode(primary, hasWaitAof);
    const modes: Mode[] = [
      { name: 'off', durability: undefined },
      { name: 'replicas 1', durability: { replicas: 1, timeoutMs: 2000 } },
      ...(waitAof ? [{ name: 'replicas 1 + aof', durability: { replicas: 1, timeoutMs: 2000, aof: true } }] : []),
    ];
    const rounds = env('BENCH_DURABILITY_ROUNDS', 3);
    const levels = [
      [1, env('BENCH_DURABILITY_JOBS_C1', 300)],
      [50, env('BENCH_DURABILITY_JOBS_C50', 1500)],
    ] as const;
    console.log(
      `durability bench — one primary + one replica (appendfsync everysec), wrapped no-op tool, ${rounds} rounds rotating the modes, medians, ` +
        `load ${(loadavg()[0] ?? 0).toFixed(1)}` +
        (waitAof ? '' : '; aof mode left out: this server has no WAITAOF (Redis < 7.2)'),
    );
    console.log('  level  mode                  jobs/s  vs off  call p50 ms  call p99 ms');
    for (const [concurrency, jobs] of levels) {
      for (const mode of modes) await pass(primary.url, prefix, mode, concurrency, Math.ceil(jobs / 3), 'warm'); // JIT and script cache
      const figures = new Map(
        modes.map((m) => [m.name, { rates: [] as number[], ratios: [] as number[], p50: [] as number[], p99: [] as number[] }]),
      );
      for (let r = 0; r < rounds; r++) {
        const order = modes.map((_, i) => modes[(i + r) % modes.length]!);
        const results = new Map<string, Awaited<ReturnType<typeof pass>>>();
        for (const mode of order) results.set(mode.name, await pass(primary.url, prefix, mode, concurrency, jobs, `r${r}`));
        const off = results.get('off')!.rate;
        for (const [name, result] of results) {
          const f = figures.get(name)!;
          f.rates.push(result.rate);
          f.ratios.push(result.rate / off);
          f.p50.push(result.p50);
          f.p99.push(result.p99);
        }
      }
      for (const mode of modes) {
        const f = figures.get(mode.name)!;
        console.log(
          `  c=${String(concurrency).padEnd(4)} ${mode.name.padEnd(18)} ${rate(median(f.rates), 9)} ${median(f.ratios).toFixed(2).padStart(7)} ` +
            `${median(f.p50).toFixed(2).padStart(12)} ${median(f.p99).toFixed(2).padStart(12)}`,
        );
      }
    }
    return 0;
  } finally {
    await replica.stop();
    await primary.stop();
  }
}

process.exitCode = await main();
