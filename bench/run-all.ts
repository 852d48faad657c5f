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
 * 5. The network mode: the queue bench's no-op levels again (bare, peer,
 *    wrapped, parallel) through a delaying TCP proxy (bench/rtt-proxy.ts)
 *    for each round trip of `--rtt` (default 0.5 ms; `--rtt 0.2,0.5,1` for
 *    several, `--rtt 0` for none), every client of the pass (BullMQ's, the
 *    receipts', the peer's) behind it; printed beside the loopback figures,
 *    with the network goals.
 * 6. The operator console's pages at 1,000 and at 1,000,000 receipts in the
 *    same runs (bench/console.ts), in a child process on a server of its own.
 * 7. The claim with one limit against the claim without, at c=1 and c=50
 *    (bench/limits.ts), in a child process on the same server.
 * 8. A transactional no-op tool (one INSERT, committed with its outcome row)
 *    against the same INSERT in a plain transaction without receipts, at
 *    c=1 and c=50 (bench/transactional.ts), in a child process on this
 *    Redis and a PostgreSQL of its own.
 * 9. Redis memory per settled receipt against the peer's record of the same
 *    result (bench/memory.ts), in a child process on a server of its own.
 * 10. The receipt layout today against leaner prototypes, paired, in Redis µs
 *    and bytes per receipt (bench/layout-prototype.ts), on a server of its own.
 * 11. What a wrapped job allocates and costs Node at c=1 against the peer's
 *    (bench/allocations.ts), on a server of its own.
 *
 * `--quick` times fewer jobs and rounds (a smoke run of every figure, in
 * about a third of the time; ratios are noisier). `--skip <steps>` leaves
 * out child benches by name, comma-separated (calls, receipts, clients,
 * durability, console, limits, transactional, memory, layout, alloc): a
 * run that re-measures what one change moved without the steps it cannot
 * touch (the console at a million receipts takes the longest).
 *
 * Starts one throwaway redis-server on a free port, or uses REDIS_URL
 * (touching only this run's prefix). A missed goal is reported, not fatal.
 *
 * Tunables: BENCH_JOBS_C1 (default 1000), BENCH_JOBS_C50 (default 2000),
 * BENCH_QUEUE_ROUNDS (default 3), BENCH_PROBE_JOBS (default 200, the untimed
 * command count), BENCH_TOOL_MS (default 5; 0 leaves out the levels whose
 * tool takes that long), BENCH_TOOL_JOBS_C1 / BENCH_TOOL_JOBS_C50 (defaults
 * 200 and 1000), BENCH_TURN_JOBS_C1 / BENCH_TURN_JOBS_C50 (defaults 600 and
 * 700; 0 leaves the three-call turn out); the child benches read their own
 * (see their headers). The c=1 passes are long enough to take a second or
 * more each: passes of a few tenths of a second moved a round's ratio by a
 * third (the 3-call turn at c=1 gave 0.51 in 200-job passes and 0.71 in
 * 1,000-job passes in the same hour).
 */
import { spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { startRedis } from '../test/support/redis.js';
import { builtAt } from './package.js';
import { formatNetworkReport, type NetworkRun } from './network.js';
import { formatQueueReport, runQueueBench, type QueueBenchOptions } from './queue.js';
import { calibrateRttProxy, startRttProxy } from './rtt-proxy.js';
import { redisVersion, unlinkMatching } from './support.js';

const GOALS = { bare: { c1: 0.6, c50: 0.85 }, peer: 0.9, control: 0.8, turnPeer: 1.5, nodeCpuC1: 1.3 };
const NETWORK_GOALS = { oneCall: 0.95, turnRate: 1.4, turnLatency: 0.75 };
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
/** `--quick` for the transactional bench: fewer jobs and rounds. */
const QUICK_TRANSACTIONAL = { BENCH_TX_JOBS_C1: '120', BENCH_TX_JOBS_C50: '600', BENCH_TX_ROUNDS: '2' };

/** The child benches, by the name `--skip` takes. */
const CHILD_STEPS = [
  'calls',
  'receipts',
  'clients',
  'durability',
  'console',
  'limits',
  'transactional',
  'memory',
  'layout',
  'alloc',
] as const;
type ChildStep = (typeof CHILD_STEPS)[number];

/** `--rtt 0.5`, `--rtt=0.2,0.5,1` (repeatable), `--quick` and `--skip console,durability`. */
function parseArgs(argv: readonly string[]): { rtts: number[]; quick: boolean; skip: ReadonlySet<ChildStep> } {
  let rtts: number[] | undefined;
  let quick = false;
  const skip = new Set<ChildStep>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--quick') quick = true;
    else if (arg === '--rtt' || arg.startsWith('--rtt=')) {
      const value = arg === '--rtt' ? argv[++i] : arg.slice('--rtt='.length);
      const parsed = (value ?? '').split(',').map(Number);
      if (parsed.length === 0 || parsed.some((v) => !Number.isFinite(v) || v < 0 || v > 50)) {
        throw new Error(`--rtt takes round trips in ms between 0 and 50, comma-separated; got ${JSON.stringify(value)}`);
      }
      rtts = [...(rtts ?? []), ...parsed.filter((v) => v > 0)];
    } else if (arg === '--skip' || arg.startsWith('--skip=')) {
      const value = arg === '--skip' ? argv[++i] : arg.slice('--skip='.length);
      for (const name of (value ?? '').split(',')) {
        if (!(CHILD_STEPS as readonly string[]).includes(name)) {
          throw new Error(`--skip takes step names, comma-separated, of ${CHILD_STEPS.join(', ')}; got ${JSON.stringify(name)}`);
        }
        skip.add(name as ChildStep);
      }
    } else throw new Error(`unknown argument ${arg} (known: --rtt <ms[,ms...]>, --quick, --skip <steps>)`);
  }
  return { rtts: rtts ?? [0.5], quick, skip };
}

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
  const args = parseArgs(process.argv.slice(2));
  const scale = args.quick ? 0.4 : 1;
  const jobs = (name: string, fallback: number) => Math.max(20, Math.round(env(name, fallback) * scale));
  // 0 leaves the three-call turn out, as the header says; any other count is at least 20.
  const turnJobs = (name: string, fallback: number) => (env(name, fallback) === 0 ? 0 : jobs(name, fallback));
  const handle = await startRedis();
  const admin = new Redis(handle.url);
  try {
    const version = await redisVersion(admin);
    const options = {
      url: handle.url,
      prefix: `${handle.prefix}:queue`,
      jobsC1: jobs('BENCH_JOBS_C1', 1000),
      jobsC50: jobs('BENCH_JOBS_C50', 2000),
      toolMs: env('BENCH_TOOL_MS', 5),
      toolJobsC1: jobs('BENCH_TOOL_JOBS_C1', 200),
      toolJobsC50: jobs('BENCH_TOOL_JOBS_C50', 1000),
      turnJobsC1: turnJobs('BENCH_TURN_JOBS_C1', 600),
      turnJobsC50: turnJobs('BENCH_TURN_JOBS_C50', 700),
      rounds: args.quick ? 2 : env('BENCH_QUEUE_ROUNDS', 3),
      probeJobs: jobs('BENCH_PROBE_JOBS', 200),
    } satisfies QueueBenchOptions;
    const loadBefore = loadavg()[0] ?? 0;
    const report = await runQueueBench(options);
    console.log(
      `queue bench — redis ${version}, BullMQ ${report.bullmqVersion}, node ${process.versions.node}, ${cpus().length} cpus, ` +
        `load ${loadBefore.toFixed(1)} -> ${(loadavg()[0] ?? 0).toFixed(1)}; package build of ${builtAt.toISOString()}; ` +
        `${options.rounds} rounds rotating bare/control/peer/wrapped/replay after a warm-up, medians (${report.seconds.toFixed(0)} s)`,
    );
    for (const line of formatQueueReport(report, GOALS)) console.log(line);
    console.log('');
    if (args.rtts.length > 0) {
      const networkRuns: NetworkRun[] = [{ rttMs: 0, addedMs: 0, levels: report.levels }];
      const target = new URL(handle.url);
      for (const rttMs of args.rtts) {
        const proxy = await startRttProxy({ host: target.hostname, port: Number(target.port || 6379) }, rttMs);
        try {
          const calibration = await calibrateRttProxy(proxy, handle.url, rttMs);
          const started = performance.now();
          // Fewer jobs per pass: each costs a few round trips more than on loopback.
          const slower = (n: number) => (n === 0 ? 0 : Math.max(20, Math.round(n / (1 + rttMs * 2))));
          const network = await runQueueBench({
            ...options,
            url: proxy.url(handle.url),
            adminUrl: handle.url,
            prefix: `${handle.prefix}:rtt${rttMs}`,
            jobsC1: slower(options.jobsC1),
            jobsC50: slower(options.jobsC50),
            toolMs: 0,
            turnJobsC1: slower(options.turnJobsC1),
            turnJobsC50: slower(options.turnJobsC50),
            kinds: ['bare', 'peer', 'wrapped', 'parallel'],
            timedOnly: true,
          });
          networkRuns.push({ rttMs, addedMs: calibration.addedMs, levels: network.levels });
          console.log(
            `network run — rtt ${rttMs} ms through a delaying proxy (a PING: ${calibration.directMs.toFixed(3)} ms straight, ` +
              `+${calibration.addedMs.toFixed(3)} ms through it); ${options.rounds} rounds of bare/peer/wrapped/parallel ` +
              `(${((performance.now() - started) / 1000).toFixed(0)} s)`,
          );
        } finally {
          await proxy.stop();
        }
      }
      console.log('loopback and network side by side (no-op tool):');
      for (const line of formatNetworkReport(networkRuns, NETWORK_GOALS)) console.log(line);
      console.log('');
    }
    const steps: Record<ChildStep, () => Promise<number>> = {
      calls: () => runChild('./calls.ts', { REDIS_URL: handle.url }),
      receipts: () => runChild('./receipts.ts', { REDIS_URL: handle.url }),
      clients: () => runChild('./clients.ts', { REDIS_URL: handle.url }),
      durability: () => runChild('./durability.ts', {}),
      // The console's pages at 1,000 and 1,000,000 receipts in the same runs (100,000 with --quick).
      console: () => runChild('./console.ts', args.quick ? { BENCH_CONSOLE_SIZES: '1000,100000' } : {}),
      limits: () => runChild('./limits.ts', { REDIS_URL: handle.url, ...(args.quick ? { BENCH_LIMIT_ROUNDS: '2' } : {}) }),
      transactional: () => runChild('./transactional.ts', { REDIS_URL: handle.url, ...(args.quick ? QUICK_TRANSACTIONAL : {}) }),
      // Servers of their own: used_memory and INFO commandstats see only these benches' writes.
      memory: () => runChild('./memory.ts', { REDIS_URL: '' }),
      layout: () => runChild('./layout-prototype.ts', { REDIS_URL: '', ...(args.quick ? { BENCH_LAYOUT_ROUNDS: '4' } : {}) }),
      alloc: () => runChild('./allocations.ts', { REDIS_URL: '', ...(args.quick ? { ALLOC_ROUNDS: '2' } : {}) }),
    };
    let failed = 0;
    for (const name of CHILD_STEPS) {
      if (args.skip.has(name)) {
        console.log(`(${name} bench skipped: --skip)\n`);
        continue;
      }
      failed ||= await steps[name]();
      console.log('');
    }
    return failed;
  } finally {
    if (!handle.controllable) await unlinkMatching(admin, `${handle.prefix}:*`);
    admin.disconnect();
    await handle.stop();
  }
}

process.exitCode = await main();
