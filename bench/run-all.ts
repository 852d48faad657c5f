/**
 * `npm run bench`: every benchmark in one run, on one Redis.
 *
 * 1. BullMQ jobs/s bare vs wrapped vs replay at concurrency 1 and 50, their
 *    the peer (Powertools-wrapped), a three-call turn, ratios against the
 *    goals, Redis commands per job, and the memory of a settled receipt and
 *    of a completed job's return value (bench/queue.ts).
 * 2. One call at a time against the peer, AWS Powertools' `makeIdempotent`
 *    over Redis: sequential latency fresh and replay, this process's CPU per
 *    call (the wrapper's own cost), and each Lua script's Redis CPU
 *    (bench/calls.ts), in a child process on the same server.
 * 3. The receipt store against raw EVALSHA (bench/receipts.ts), in a child
 *    process pointed at the same server through REDIS_URL, so its event loop
 *    and heap are its own.
 * 3b. The receipt store through each client it accepts, side by side
 *    (bench/clients.ts: ioredis 5 and 6, node-redis 6 and 5), in a child
 *    process on the same server.
 * 4. The cost of each durability mode (bench/durability.ts), in a child
 *    process on a primary and replica of its own.
 *
 * Starts one throwaway redis-server on a free port, or uses REDIS_URL
 * (touching only this run's prefix). A missed goal is reported, not fatal.
 *
 * Tunables: BENCH_JOBS_C1 (default 500), BENCH_JOBS_C50 (default 2000),
 * BENCH_QUEUE_ROUNDS (default 3), BENCH_PROBE_JOBS (default 200, the untimed
 * command count), BENCH_TOOL_MS (default 5; 0 leaves out the levels whose
 * tool takes that long), BENCH_TOOL_JOBS_C1 / BENCH_TOOL_JOBS_C50 (defaults
 * 200 and 1000), BENCH_TURN_JOBS_C1 / BENCH_TURN_JOBS_C50 (defaults 200 and
 * 700; 0 leaves the three-call turn out); the child benches read their own
 * (see their headers).
 */
import { spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { startRedis } from '../test/support/redis.js';
import { builtAt } from './package.js';
import { formatQueueReport, runQueueBench } from './queue.js';
import { redisVersion, unlinkMatching } from './support.js';

const GOALS = { bare: { c1: 0.6, c50: 0.85 }, peer: 0.9, control: 0.8, turnPeer: 1.5 };
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

/** Runs a sibling bench script in a child Node with the same loader (tsx); resolves with its exit code. */
function runChild(file: string, extraEnv: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(new URL(file, import.meta.url))], {
      stdio: 'inherit',
      env: { ...process.env, ...extraEnv },
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

async function main(): Promise<number> {
  const handle = await startRedis();
  const admin = new Redis(handle.url);
  try {
    const version = await redisVersion(admin);
    const options = {
      url: handle.url,
      prefix: `${handle.prefix}:queue`,
      jobsC1: env('BENCH_JOBS_C1', 500),
      jobsC50: env('BENCH_JOBS_C50', 2000),
      toolMs: env('BENCH_TOOL_MS', 5),
      toolJobsC1: env('BENCH_TOOL_JOBS_C1', 200),
      toolJobsC50: env('BENCH_TOOL_JOBS_C50', 1000),
      turnJobsC1: env('BENCH_TURN_JOBS_C1', 200),
      turnJobsC50: env('BENCH_TURN_JOBS_C50', 700),
      rounds: env('BENCH_QUEUE_ROUNDS', 3),
      probeJobs: env('BENCH_PROBE_JOBS', 200),
    };
    const loadBefore = loadavg()[0] ?? 0;
    const report = await runQueueBench(options);
    console.log(
      `queue bench — redis ${version}, BullMQ ${report.bullmqVersion}, node ${process.versions.node}, ${cpus().length} cpus, ` +
        `load ${loadBefore.toFixed(1)} -> ${(loadavg()[0] ?? 0).toFixed(1)}; package build of ${builtAt.toISOString()}; ` +
        `${options.rounds} rounds rotating bare/control/peer/wrapped/replay after a warm-up, medians (${report.seconds.toFixed(0)} s)`,
    );
    for (const line of formatQueueReport(report, GOALS)) console.log(line);
    console.log('');
    const calls = await runChild('./calls.ts', { REDIS_URL: handle.url });
    console.log('');
    const receipts = await runChild('./receipts.ts', { REDIS_URL: handle.url });
    console.log('');
    const clients = await runChild('./clients.ts', { REDIS_URL: handle.url });
    console.log('');
    const durability = await runChild('./durability.ts', {});
    return calls || receipts || clients || durability;
  } finally {
    if (!handle.controllable) await unlinkMatching(admin, `${handle.prefix}:*`);
    admin.disconnect();
    await handle.stop();
  }
}

process.exitCode = await main();
