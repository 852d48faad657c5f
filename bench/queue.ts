/**
 * BullMQ throughput with and without the wrapper.
 *
 * Every pass pre-fills a fresh queue with N one-call jobs (addBulk), waits
 * until a Worker (autorun off) has both its connections ready, then times
 * from `worker.run()` to the N-th local `completed` event. Four kinds of
 * pass, on the same tool (a no-op, and then, as a second set of levels, a
 * timer of a few ms standing in for a fast provider API):
 *
 * - bare: a plain processor that calls the tool and returns a hand-rolled
 *   `{ results: [{ type, tool_use_id, content }] }` (no validation, no Redis
 *   beyond BullMQ's own);
 * - control: only the receipt's two round trips, claim and complete, around
 *   the tool, with none of the wrapper's own work (validation, hashing,
 *   lease keeping, events, result shaping): the share of the cost that is
 *   the round trips themselves;
 * - wrapped: `withToolReceipts`, fresh arguments on every job, so every call
 *   claims, executes and settles a receipt;
 * - replay: the very jobs of the wrapped pass before it, enqueued again
 *   (same tenant, run, call ids and arguments), so every call finds a
 *   completed receipt and replays it;
 * - traced: `withToolReceipts` with `toolReceiptsOtel()` on an OpenTelemetry
 *   SDK (AsyncLocalStorage context, a batching span processor whose exporter
 *   drops what it is given, a meter provider), so every call also makes a
 *   span, records its metrics and keeps the ambiguous gauge's index: the
 *   cost of tracing on, next to `wrapped` (off) in the same rounds;
 * - ungrouped: `withToolReceipts` with `groupCommit: false`, so every claim
 *   and complete goes out as its own script call: what group commit buys
 *   (or costs), next to `wrapped` (on, the default) in the same rounds;
 * - parallel (turn levels only): the wrapped pass with `parallel: true` in
 *   the job data, so the turn's calls run side by side;
 * - peer: the bare processor's calls each wrapped in AWS Powertools'
 *   `makeIdempotent` over its Redis persistence layer (bench/peer.ts), on
 *   its own connection to the same server: what a team would use instead.
 *
 * Levels: one call per job at concurrency 1 and 50 (the no-op tool, then a
 * timer), and a turn of three calls per job (no-op) at both concurrencies.
 *
 * Jobs are added with `removeOnComplete: true` on every side. Rounds rotate
 * the order of the kinds so drift on the machine lands on all of them, and
 * the ratio reported is the median of the per-round ratios. Each timed pass
 * also records CPU per job of this process and of the Redis server, which a
 * busy machine disturbs less than wall time.
 *
 * Untimed, afterwards: commands per job (those the wrapper sends on its own
 * connection, and every command the server ran, from INFO commandstats), and
 * MEMORY USAGE of a settled receipt, of a run's index and breaker hash, and
 * of a retained completed job with its return value, bare vs wrapped.
 *
 * One wrapper instance serves every pass, as one would per worker process,
 * on its own connection; Workers and Queues open their own.
 */
import { createHash } from 'node:crypto';
import { cpus } from 'node:os';
import { readdirSync, readFileSync } from 'node:fs';
import { Queue, Worker, type ConnectionOptions, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { z } from 'zod';
import type { ToolJobData } from '../src/bullmq/job-data.js';
import { toolCallArgsHash } from '../src/core/identity.js';
import type { ToolReceiptsProcessor } from '../src/bullmq/processor.js';
import { built, builtOtel } from './package.js';
import type { ReceiptStore } from '../src/redis/receipts/store.js';
import { luaScript } from '../src/redis/scripts/scripts.js';
import { startBenchOtel } from './otel.js';
import { peerIdempotent, peerProcessor } from './peer.js';
import { callsDelta, commandCalls, median } from './support.js';

export type PassKind = 'bare' | 'control' | 'peer' | 'wrapped' | 'replay' | 'traced' | 'ungrouped' | 'parallel';
/** The kinds of every level; turn levels add `parallel`. */
const KINDS = ['bare', 'control', 'peer', 'wrapped', 'replay', 'traced', 'ungrouped'] as const;
const kindsOf = (calls: number): PassKind[] => (calls > 1 ? [...KINDS, 'parallel'] : [...KINDS]);
/** Fresh per-kind arrays. */
const perKind = (): Record<PassKind, number[]> => ({
  bare: [],
  control: [],
  peer: [],
  wrapped: [],
  replay: [],
  traced: [],
  ungrouped: [],
  parallel: [],
});

export interface QueueBenchOptions {
  readonly url: string;
  /** Every key this bench writes starts with `<prefix>:`. */
  readonly prefix: string;
  /** Jobs per timed pass at concurrency 1 and at concurrency 50, with the no-op tool. */
  readonly jobsC1: number;
  readonly jobsC50: number;
  /**
   * How long the tool of the second set of levels takes (a timer, standing in
   * for a fast provider API); 0 leaves that set out.
   */
  readonly toolMs: number;
  /** Jobs per timed pass at concurrency 1 and 50 with that tool. */
  readonly toolJobsC1: number;
  readonly toolJobsC50: number;
  /** Jobs per timed pass at concurrency 1 and 50 of the turn level (three no-op calls per job); 0 leaves it out. */
  readonly turnJobsC1: number;
  readonly turnJobsC50: number;
  /** Timed rounds (each one pass of every kind at both concurrencies). */
  readonly rounds: number;
  /** Jobs per pass in the untimed command count. */
  readonly probeJobs: number;
  /**
   * The kinds of pass to time (bare is always one, ratios are taken to it);
   * every kind when left out. The network runs time fewer.
   */
  readonly kinds?: readonly PassKind[];
  /** Leaves out the untimed command count and memory probes (the network runs keep to the timed passes). */
  readonly timedOnly?: boolean;
  /**
   * Where INFO is read (CPU, commandstats): the server itself, when `url`
   * goes through the network mode's proxy. Defaults to `url`.
   */
  readonly adminUrl?: string;
}

/** Timed figures at one concurrency and tool duration. */
export interface LevelFigures {
  readonly concurrency: number;
  readonly jobs: number;
  /** How long the tool takes; 0 for the no-op tool the goals are set against. */
  readonly toolMs: number;
  /** Tool calls per job: 1, or {@link TURN_CALLS} for the turn level. */
  readonly calls: number;
  readonly rates: Record<PassKind, number[]>;
  /** CPU per job in µs, per round: this Node process (BullMQ and wrapper) and the Redis server. */
  readonly nodeCpu: Record<PassKind, number[]>;
  readonly redisCpu: Record<PassKind, number[]>;
  /** Median time in the processor per job, ms, per round: the job's latency beyond BullMQ's own fetch and finish. */
  readonly latencyMs: Record<PassKind, number[]>;
  /** Per-round ratio of each kind to bare (bare's own is all 1). */
  readonly ratios: Record<PassKind, number[]>;
  /** Per-round ratio of traced to wrapped: what turning tracing on keeps. */
  readonly tracedToWrapped: number[];
  /** Per-round ratio of wrapped (group commit on) to ungrouped (off): what group commit buys. */
  readonly groupedToUngrouped: number[];
}

/** Commands per job for one kind of pass. */
export interface CommandCount {
  /** Commands sent on the wrapper's own connection, by command (scripts by file). */
  readonly wrapperConnection: Map<string, number>;
  /** Every command the server executed, scripts' inner calls included (INFO commandstats). */
  readonly server: Map<string, number>;
  readonly jobs: number;
}

export interface QueueBenchReport {
  readonly levels: LevelFigures[];
  /** By probe: `bare`, `peer`, `wrapped`, `replay` (one call per job), `peer turn`, `wrapped turn` (three calls per job). */
  readonly commands: Map<string, CommandCount>;
  /** Spans the traced passes handed to the exporter. */
  readonly spansExported: number;
  /** Group commit's batches (two calls or more) from the wrapped and replay passes, and the calls they carried. */
  readonly groupCommitted: { readonly batches: number; readonly calls: number };
  /** Left out with `timedOnly`. */
  readonly memory?: {
    readonly receiptBytes: number;
    readonly receiptFields: number;
    readonly receiptResultBytes: number;
    readonly runIndexBytes: number;
    readonly runIndexEntries: number;
    readonly breakerBytes: number;
    readonly returnValue: { bare: string; wrapped: string };
    readonly jobHashBytes: { bare: number; wrapped: number };
  };
  readonly bullmqVersion: string;
  readonly seconds: number;
}

interface PassFigures {
  readonly rate: number;
  readonly latencyMs: number;
  readonly nodeCpuUs: number;
  readonly redisCpuUs: number;
}

/** used_cpu_user + used_cpu_sys of the server, in seconds. */
async function redisCpuSeconds(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return field('used_cpu_user') + field('used_cpu_sys');
}

const { defineTool, withToolReceipts } = built;
const { toolReceiptsOtel } = builtOtel;
const TOOL_RESULT = { ok: true, messageId: 'msg-0000000000' };
/** The tool both sides run: no-op at `ms` 0 (returns synchronously), else a timer of `ms`. */
const sendEmail = (ms: number): typeof TOOL_RESULT | Promise<typeof TOOL_RESULT> =>
  ms > 0 ? new Promise((resolve) => setTimeout(() => resolve(TOOL_RESULT), ms)) : TOOL_RESULT;
const tool = defineTool({
  name: 'send_email',
  input: z.object({ to: z.string(), subject: z.string(), n: z.number().int(), ms: z.number().int().nonnegative() }),
  effect: 'opaque',
  destructive: false,
  execute: (args) => sendEmail(args.ms),
});
/** Jobs of one pass spread over this many agent runs (20 calls per run at 2,000 jobs). */
const RUNS_PER_PASS = 100;
const JOB_OPTS = { removeOnComplete: true, removeOnFail: true } as const;
const PASS_TIMEOUT_MS = 120_000;
/** Calls per job of the turn level: a model's parallel tool use, run one after another. */
export const TURN_CALLS = 3;
const RETENTION_MS = 86_400_000;
const LEASE_MS = 30_000;
const PEER_TIMES = { retentionSeconds: RETENTION_MS / 1000, leaseMs: LEASE_MS };

/** A job with `calls` fresh calls, distinct for every (tag, i), to a tool taking `ms`. */
function jobData(tag: string, i: number, ms = 0, calls = 1): ToolJobData {
  return {
    tenantId: 'bench',
    runId: `run-${tag}-${i % RUNS_PER_PASS}`,
    calls: Array.from({ length: calls }, (_, k) => ({
      id: `toolu_${tag}_${i}_${k}`,
      name: tool.name,
      input: { to: 'user@example.com', subject: 'bench', n: i * calls + k, ms },
    })),
  };
}

/** Runs the tool for one call of a job, as both hand-written processors do. */
const runTool = (call: { readonly input?: unknown }) => sendEmail((call.input as { ms: number }).ms);

/** What a processor without receipts would do: run each call, hand the result back. */
async function bareProcessor(job: Job<ToolJobData>) {
  const results = [];
  for (const call of job.data.calls) {
    const value = await runTool(call);
    results.push({ type: 'tool_result' as const, tool_use_id: call.id, content: JSON.stringify(value) });
  }
  return { results };
}

/**
 * The control: claim, run the tool, complete, on the wrapper's own store,
 * keyed by the call id (unique per job); nothing else the wrapper does.
 */
function controlProcessorOn(store: ReceiptStore) {
  return async (job: Job<ToolJobData>) => {
    const { tenantId, runId, calls } = job.data;
    const results = [];
    for (const call of calls) {
      const key = { tenantId, runId, toolName: call.name, argsHash: call.id };
      const claim = await store.claim(key, { effect: 'opaque' });
      if (claim.fence === undefined) throw new Error(`control pass: ${call.id} got ${claim.decision.kind}`);
      const content = JSON.stringify(await runTool(call));
      await store.complete(key, claim.fence, { content });
      results.push({ type: 'tool_result' as const, tool_use_id: call.id, content, outcome: 'executed' as const });
    }
    return { results };
  };
}

/** Script SHA1 → `lua/` file name, to name EVALSHA round trips (sources as the package loads them). */
function scriptNames(): Map<string, string> {
  const names = new Map<string, string>();
  for (const file of readdirSync(new URL('../lua/', import.meta.url))) {
    if (!/-(?:\d+|N)\.lua$/.test(file)) continue;
    const { sha, function: fn } = luaScript(file);
    const name = file.replace(/-(?:\d+|N)\.lua$/, '');
    names.set(sha, name);
    if (fn !== undefined) names.set(fn.name, name);
  }
  return names;
}

/** Counts commands sent on one ioredis connection between `start` and `stop` (timed passes run unpatched). */
function commandCounter(redis: Redis) {
  const names = scriptNames();
  const original = redis.sendCommand;
  let counts = new Map<string, number>();
  return {
    start(): void {
      counts = new Map();
      redis.sendCommand = ((command: { name: string; args: unknown[] }, stream?: unknown) => {
        let name = command.name;
        if (name === 'evalsha' || name === 'eval' || name === 'fcall') {
          const first = String(command.args[0]);
          const sha = name === 'eval' ? createHash('sha1').update(first).digest('hex') : first;
          name = `${name} ${names.get(sha) ?? sha.slice(0, 8)}`;
        }
        counts.set(name, (counts.get(name) ?? 0) + 1);
        return (original as (c: unknown, s?: unknown) => unknown).call(redis, command, stream);
      }) as typeof redis.sendCommand;
    },
    stop(): Map<string, number> {
      redis.sendCommand = original;
      return counts;
    },
  };
}

/** Settles with `promise`, or rejects after `ms` so a stuck pass cannot hang the run. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms / 1000} s`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export async function runQueueBench(options: QueueBenchOptions): Promise<QueueBenchReport> {
  const began = performance.now();
  const url = new URL(options.url);
  const connection: ConnectionOptions = {
    host: url.hostname,
    port: Number(url.port || 6379),
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    maxRetriesPerRequest: null,
  };
  const bullPrefix = `${options.prefix}:bull`;
  const receiptsPrefix = `${options.prefix}:trc`;
  const admin = new Redis(options.adminUrl ?? options.url);
  const receiptsRedis = new Redis(options.url, { maxRetriesPerRequest: null });
  // The peer gets its own connection, as the wrapper has.
  const peerRedis = new Redis(options.url, { maxRetriesPerRequest: null });
  const counters = { wrapper: commandCounter(receiptsRedis), peer: commandCounter(peerRedis) };
  const wrapperOptions = {
    redis: receiptsRedis,
    tools: [tool],
    prefix: receiptsPrefix,
    leaseMs: LEASE_MS,
    retentionMs: RETENTION_MS,
    logger: pino({ level: 'silent' }),
  };
  const wrapped: ToolReceiptsProcessor = withToolReceipts(wrapperOptions);
  const controlProcessor = controlProcessorOn(wrapped.store);
  const otel = startBenchOtel();
  // The same wrapper with tracing on: the traced passes against the wrapped ones.
  const traced = withToolReceipts({ ...wrapperOptions, telemetry: toolReceiptsOtel({ tracer: otel.tracer, meter: otel.meter }) });
  const peer = peerProcessor(peerIdempotent(peerRedis, `${options.prefix}:peer`, PEER_TIMES, (call) => runTool(call)));
  // The same wrapper with group commit off: every claim and complete its own script call.
  const ungrouped = withToolReceipts({ ...wrapperOptions, groupCommit: false });
  const processors = {
    bare: bareProcessor,
    control: controlProcessor,
    peer,
    wrapped,
    replay: wrapped,
    traced,
    ungrouped,
    parallel: wrapped,
  };
  try {
    let passNo = 0;
    /** One pass: fill a fresh queue, run a Worker to the last completion; jobs/s and CPU µs per job. */
    async function pass(
      kind: PassKind,
      concurrency: number,
      jobs: ToolJobData[],
      hooks: { before?: () => void | Promise<void>; after?: () => void | Promise<void> } = {},
    ): Promise<PassFigures> {
      const queueName = `${kind}-c${concurrency}-p${passNo++}`;
      const queue = new Queue(queueName, { connection, prefix: bullPrefix });
      const expected = kind === 'replay' ? 'replayed' : kind === 'bare' || kind === 'peer' ? undefined : 'executed';
      try {
        await queue.addBulk(jobs.map((data) => ({ name: 'call', data, opts: JOB_OPTS })));
        const processor = processors[kind];
        // Time in the processor per job: the same thin wrapper on every kind, of the processor's own arity
        // (BullMQ makes an AbortController per job only for a processor of three parameters).
        const durations: number[] = [];
        const run = processor as (j: Job<ToolJobData>, t?: string, s?: AbortSignal) => Promise<unknown>;
        const timed =
          run.length >= 3
            ? async (job: Job<ToolJobData>, token?: string, signal?: AbortSignal) => {
                const started = performance.now();
                try {
                  return await run(job, token, signal);
                } finally {
                  durations.push(performance.now() - started);
                }
              }
            : async (job: Job<ToolJobData>) => {
                const started = performance.now();
                try {
                  return await run(job);
                } finally {
                  durations.push(performance.now() - started);
                }
              };
        const worker = new Worker(queueName, timed, { connection, prefix: bullPrefix, concurrency, autorun: false });
        const detach =
          processor === wrapped || processor === traced || processor === ungrouped ? processor.attach(worker) : () => undefined;
        try {
          let done = 0;
          const problems: string[] = [];
          const finished = new Promise<void>((resolve) => {
            const tally = () => void (++done === jobs.length && resolve());
            worker.on('completed', (_job, result) => {
              for (const block of (result as { results: unknown }).results as { outcome?: string }[]) {
                if (expected !== undefined && block.outcome !== expected) problems.push(`outcome ${String(block.outcome)}`);
              }
              tally();
            });
            worker.on('failed', (_job, error) => {
              problems.push(error.message);
              tally();
            });
          });
          worker.on('error', (error) => problems.push(error.message));
          await worker.waitUntilReady();
          await hooks.before?.();
          if (kind === 'traced') otel.enterPass();
          const redisCpuBefore = await redisCpuSeconds(admin);
          const cpuBefore = process.cpuUsage();
          const started = performance.now();
          worker.run().catch((error: Error) => problems.push(error.message));
          await within(finished, PASS_TIMEOUT_MS, `${kind} pass at c=${concurrency}`);
          const seconds = (performance.now() - started) / 1000;
          const cpu = process.cpuUsage(cpuBefore);
          const redisCpu = (await redisCpuSeconds(admin)) - redisCpuBefore;
          if (kind === 'traced') otel.leavePass();
          await hooks.after?.();
          if (problems.length > 0) {
            throw new Error(`${kind} pass at c=${concurrency}: ${problems.length} jobs went wrong, first: ${problems[0]}`);
          }
          return {
            rate: jobs.length / seconds,
            latencyMs: median(durations),
            nodeCpuUs: (cpu.user + cpu.system) / jobs.length,
            redisCpuUs: (redisCpu * 1e6) / jobs.length,
          };
        } finally {
          detach();
          await worker.close();
        }
      } finally {
        await queue.obliterate({ force: true }).catch(() => undefined);
        await queue.close();
      }
    }

    /** One pass of every kind at `concurrency`, in the given order; replay re-runs the wrapped pass's jobs. */
    async function round(tag: string, concurrency: number, jobs: number, toolMs: number, calls: number, order: PassKind[]) {
      const jobsOf = (kind: PassKind) => Array.from({ length: jobs }, (_, i) => jobData(`${tag}-${kind}`, i, toolMs, calls));
      // Replay re-runs the wrapped pass's very jobs.
      const byKind = {
        bare: jobsOf('bare'),
        control: jobsOf('control'),
        peer: jobsOf('peer'),
        wrapped: jobsOf('wrapped'),
        traced: jobsOf('traced'),
        ungrouped: jobsOf('ungrouped'),
        parallel: jobsOf('parallel').map((data) => ({ ...data, parallel: true })),
      };
      const figures = {} as Record<PassKind, PassFigures>;
      for (const kind of order.filter(timedKind)) {
        figures[kind] = await pass(kind, concurrency, kind === 'replay' ? byKind.wrapped : byKind[kind]);
      }
      return figures;
    }

    const timedKind = (kind: PassKind) => kind === 'bare' || options.kinds === undefined || options.kinds.includes(kind);
    // Warm-up: JIT (the wrapper's code keeps getting faster for a few thousand calls), script cache; not reported.
    for (const [concurrency, jobs] of [
      [50, Math.ceil(options.jobsC50 / 2)],
      [1, options.jobsC1],
    ] as const) {
      await round(`warm-c${concurrency}`, concurrency, jobs, 0, 1, [...KINDS]);
    }

    const levels: LevelFigures[] = [];
    const plan: (readonly [concurrency: number, jobs: number, toolMs: number, calls: number])[] = [
      [1, options.jobsC1, 0, 1],
      [50, options.jobsC50, 0, 1],
      ...(options.toolMs > 0
        ? ([
            [1, options.toolJobsC1, options.toolMs, 1],
            [50, options.toolJobsC50, options.toolMs, 1],
          ] as const)
        : []),
      ...(options.turnJobsC1 > 0 ? ([[1, options.turnJobsC1, 0, TURN_CALLS]] as const) : []),
      ...(options.turnJobsC50 > 0 ? ([[50, options.turnJobsC50, 0, TURN_CALLS]] as const) : []),
    ];
    for (const [concurrency, jobs, toolMs, calls] of plan) {
      const level: LevelFigures = {
        concurrency,
        jobs,
        toolMs,
        calls,
        rates: perKind(),
        nodeCpu: perKind(),
        redisCpu: perKind(),
        latencyMs: perKind(),
        ratios: perKind(),
        tracedToWrapped: [],
        groupedToUngrouped: [],
      };
      for (let r = 0; r < options.rounds; r++) {
        // Replay must follow its wrapped pass; bare goes first or last in turn.
        const all = kindsOf(calls);
        const order: PassKind[] =
          r % 2 === 0 ? all : ['ungrouped', 'traced', 'wrapped', 'replay', 'peer', 'control', 'bare', ...all.slice(KINDS.length)];
        const figures = await round(`c${concurrency}-t${toolMs}-k${calls}-r${r}`, concurrency, jobs, toolMs, calls, order);
        for (const kind of all.filter(timedKind)) {
          level.rates[kind].push(figures[kind].rate);
          level.latencyMs[kind].push(figures[kind].latencyMs);
          level.nodeCpu[kind].push(figures[kind].nodeCpuUs);
          level.redisCpu[kind].push(figures[kind].redisCpuUs);
          level.ratios[kind].push(figures[kind].rate / figures.bare.rate);
        }
        if (figures.traced && figures.wrapped) level.tracedToWrapped.push(figures.traced.rate / figures.wrapped.rate);
        if (figures.ungrouped && figures.wrapped) level.groupedToUngrouped.push(figures.wrapped.rate / figures.ungrouped.rate);
      }
      levels.push(level);
    }

    // Commands per job, untimed: the wrapper's connection (client side) and the whole server (commandstats).
    // The control pass sends the same two scripts as the wrapped one, so it is not counted again. The turn
    // probes show what a turn of calls run one after another costs: each complete also claims the next call.
    const commands = new Map<string, CommandCount>();
    const probe = (tag: string, calls = 1) => Array.from({ length: options.probeJobs }, (_, i) => jobData(tag, i, 0, calls));
    const wrappedProbe = probe('count-wrapped');
    const probes: [string, 'bare' | 'peer' | 'wrapped' | 'replay', ToolJobData[]][] = [
      ['bare', 'bare', probe('count-bare')],
      ['peer', 'peer', probe('count-peer')],
      ['wrapped', 'wrapped', wrappedProbe],
      ['replay', 'replay', wrappedProbe],
      ['peer turn', 'peer', probe('count-peer-turn', TURN_CALLS)],
      ['wrapped turn', 'wrapped', probe('count-wrapped-turn', TURN_CALLS)],
    ];
    for (const [label, kind, jobs] of options.timedOnly ? [] : probes) {
      let before = new Map<string, number>();
      let server = new Map<string, number>();
      let client = new Map<string, number>();
      const counter = kind === 'peer' ? counters.peer : counters.wrapper;
      await pass(kind, 50, jobs, {
        before: async () => {
          before = await commandCalls(admin);
          counter.start();
        },
        after: async () => {
          client = counter.stop();
          server = callsDelta(before, await commandCalls(admin));
          // The first snapshot's own INFO is counted in the second.
          const info = (server.get('info') ?? 0) - 1;
          if (info > 0) server.set('info', info);
          else server.delete('info');
        },
      });
      commands.set(label, { wrapperConnection: client, server, jobs: options.probeJobs });
    }

    // Memory: one retained job per side, and the receipt its wrapped call settled.
    const memory = options.timedOnly
      ? undefined
      : await (async () => {
          const queueName = 'memory';
          const queue = new Queue(queueName, { connection, prefix: bullPrefix });
          const worker = new Worker(queueName, (job: Job) => (job.name === 'bare' ? bareProcessor(job) : wrapped(job, undefined)), {
            connection,
            prefix: bullPrefix,
          });
          try {
            await worker.waitUntilReady();
            const data = jobData('memory', 0);
            const bareJob = await queue.add('bare', data, { removeOnComplete: false });
            const wrappedJob = await queue.add('wrapped', data, { removeOnComplete: false });
            const deadline = Date.now() + 10_000;
            while ((await queue.getCompletedCount()) < 2) {
              if (Date.now() > deadline) throw new Error('memory probe jobs did not complete');
              await new Promise((resolve) => setTimeout(resolve, 20));
            }
            const jobKey = (id: string | undefined) => `${bullPrefix}:${queueName}:${id ?? ''}`;
            const usage = async (key: string) => Number(await admin.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
            const call = data.calls[0]!;
            const receiptKey = wrapped.store.redisKey({
              tenantId: data.tenantId,
              runId: data.runId,
              toolName: call.name,
              argsHash: await toolCallArgsHash(call.input),
            });
            // A run from a timed pass holds jobs / RUNS_PER_PASS receipts.
            const busyRun = { tenantId: 'bench', runId: `run-c50-t0-k1-r0-wrapped-7` };
            return {
              receiptBytes: await usage(receiptKey),
              receiptFields: await admin.hlen(receiptKey),
              receiptResultBytes: await admin.hstrlen(receiptKey, 'result'),
              runIndexBytes: await usage(wrapped.store.runIndexKey(busyRun.tenantId, busyRun.runId)),
              runIndexEntries: await admin.zcard(wrapped.store.runIndexKey(busyRun.tenantId, busyRun.runId)),
              breakerBytes: await usage(wrapped.breaker.redisKey(busyRun.tenantId, busyRun.runId)),
              returnValue: {
                bare: (await admin.hget(jobKey(bareJob.id), 'returnvalue')) ?? '',
                wrapped: (await admin.hget(jobKey(wrappedJob.id), 'returnvalue')) ?? '',
              },
              jobHashBytes: { bare: await usage(jobKey(bareJob.id)), wrapped: await usage(jobKey(wrappedJob.id)) },
            };
          } finally {
            await worker.close();
            await queue.obliterate({ force: true }).catch(() => undefined);
            await queue.close();
          }
        })();

    const bullmqVersion = JSON.parse(readFileSync(new URL('../node_modules/bullmq/package.json', import.meta.url), 'utf8'))
      .version as string;
    await otel.flush();
    const groupCommitted = wrapped.store.groupCommitted;
    return {
      levels,
      commands,
      memory,
      bullmqVersion,
      spansExported: otel.exported(),
      groupCommitted,
      seconds: (performance.now() - began) / 1000,
    };
  } finally {
    await otel.shutdown();
    receiptsRedis.disconnect();
    peerRedis.disconnect();
    admin.disconnect();
  }
}

/** `c=1` for the no-op tool, `c=1 tool 5ms` for a tool that takes 5 ms, `c=1 turn 3` for three no-op calls per job. */
export const levelName = (level: LevelFigures) =>
  `c=${level.concurrency}${level.toolMs > 0 ? ` tool ${level.toolMs}ms` : ''}${level.calls > 1 ? ` turn ${level.calls}` : ''}`;
const fmt = (value: number, width: number, digits = 0) => value.toFixed(digits).padStart(width);
const list = (values: number[], digits = 0) => values.map((v) => v.toFixed(digits)).join(', ');
const perJob = (counts: Map<string, number>, jobs: number) =>
  [...counts]
    .sort((a, b) => b[1] - a[1])
    .map(([name, n]) => `${name} ${(n / jobs).toFixed(2).replace(/\.00$/, '')}`)
    .join(', ') || 'none';
const total = (counts: Map<string, number>) => [...counts.values()].reduce((a, b) => a + b, 0);
/** Per-round ratios of one kind's rate to another's (each pair from the same round). */
export const roundRatios = (level: LevelFigures, kind: PassKind, to: PassKind) =>
  level.rates[kind].map((rate, r) => rate / (level.rates[to][r] ?? rate));
/** `min/median/max` of per-round ratios. */
export const spread = (values: number[]) =>
  `${Math.min(...values).toFixed(2)}/${median(values).toFixed(2)}/${Math.max(...values).toFixed(2)}`;

/** What the report checks, all against the no-op tool: the wrapper's whole cost, with nothing to hide it. */
export interface QueueGoals {
  /** wrapped/bare at c=1 and c=50, one call per job. */
  readonly bare: { readonly c1: number; readonly c50: number };
  /** wrapped/peer, one call per job, at both concurrencies. */
  readonly peer: number;
  /** wrapped/control, one call per job, at both concurrencies. */
  readonly control: number;
  /** wrapped/peer on the turn level. */
  readonly turnPeer: number;
  /** wrapped/peer Node CPU per job at c=1, one call per job, at most. */
  readonly nodeCpuC1: number;
}

/** The report as printed lines. */
export function formatQueueReport(report: QueueBenchReport, goals: QueueGoals): string[] {
  const lines: string[] = [];
  lines.push(
    '  jobs/s, medians of rounds; ratios are per round, min/median/max',
    '  level            jobs  bare j/s  peer j/s  wrapped j/s  replay j/s   wrapped/peer  wrapped/control   replay/peer   wrapped/bare  parallel/peer',
  );
  for (const level of report.levels) {
    const m = (kind: PassKind) => median(level.rates[kind]);
    const cells = [
      fmt(level.jobs, 5),
      fmt(m('bare'), 9),
      fmt(m('peer'), 9),
      fmt(m('wrapped'), 12),
      fmt(m('replay'), 11),
      spread(roundRatios(level, 'wrapped', 'peer')).padStart(14),
      spread(roundRatios(level, 'wrapped', 'control')).padStart(16),
      spread(roundRatios(level, 'replay', 'peer')).padStart(13),
      spread(level.ratios.wrapped).padStart(14),
      (level.rates.parallel.length > 0 ? spread(roundRatios(level, 'parallel', 'peer')) : '-').padStart(14),
    ];
    lines.push(`  ${levelName(level).padEnd(14)}${cells.join(' ')}`);
  }
  lines.push('  tracing on vs off (toolReceiptsOtel on an OpenTelemetry SDK; same rounds):');
  for (const level of report.levels) {
    lines.push(
      `    ${levelName(level).padEnd(14)} traced ${fmt(median(level.rates.traced), 6)} j/s vs wrapped ${fmt(median(level.rates.wrapped), 6)} j/s: ` +
        `traced/wrapped ${median(level.tracedToWrapped).toFixed(2)} [${list(level.tracedToWrapped, 2)}]; ` +
        `node CPU per job ${median(level.nodeCpu.traced).toFixed(0)} vs ${median(level.nodeCpu.wrapped).toFixed(0)} µs`,
    );
  }
  lines.push(`    spans exported: ${report.spansExported}`);
  lines.push('  group commit on (wrapped, the default) vs off (ungrouped; same rounds):');
  for (const level of report.levels) {
    if (level.groupedToUngrouped.length === 0) continue;
    const cpu = (figures: Record<PassKind, number[]>) =>
      `${median(figures.wrapped).toFixed(0)} vs ${median(figures.ungrouped).toFixed(0)} µs`;
    lines.push(
      `    ${levelName(level).padEnd(14)} on ${fmt(median(level.rates.wrapped), 6)} j/s vs off ${fmt(median(level.rates.ungrouped), 6)} j/s: ` +
        `on/off ${median(level.groupedToUngrouped).toFixed(2)} [${list(level.groupedToUngrouped, 2)}]; ` +
        `per job node CPU ${cpu(level.nodeCpu)}, redis CPU ${cpu(level.redisCpu)}`,
    );
  }
  const { batches, calls } = report.groupCommitted;
  lines.push(
    `    the wrapped and replay passes sent ${batches} batches carrying ${calls} calls (${batches > 0 ? (calls / batches).toFixed(1) : '0'} a batch); every other claim and complete went alone`,
  );
  lines.push('  per round, jobs/s:');
  for (const level of report.levels) {
    lines.push(
      `    ${levelName(level)}: ${kindsOf(level.calls)
        .map((kind) => `${kind} [${list(level.rates[kind])}]`)
        .join('  ')}`,
    );
  }
  lines.push('  CPU per job, µs (median of rounds): node = this process (BullMQ + wrapper), redis = server');
  for (const level of report.levels) {
    const cpu = (figures: Record<PassKind, number[]>) =>
      kindsOf(level.calls)
        .map((kind) => `${kind} ${median(figures[kind]).toFixed(0)}`)
        .join(', ');
    lines.push(`    ${levelName(level).padEnd(14)} node: ${cpu(level.nodeCpu)}; redis: ${cpu(level.redisCpu)}`);
  }
  // Where a pass is CPU-bound, jobs/s cannot beat what the CPU a job costs allows: each process runs its
  // JavaScript or commands on one thread, and the two share the machine's cores (at c=1 they take turns
  // on one job at a time, so their CPU adds up). The ratio of those ceilings bounds wrapped / peer,
  // whatever the round trips.
  lines.push(
    `  CPU ceiling (per job medians): at c=1 jobs/s <= 1e6 / (node µs + redis µs); ` +
      `above, <= min(1e6 / node µs, 1e6 / redis µs, ${cpus().length} cores × 1e6 / (node µs + redis µs))`,
  );
  for (const level of report.levels) {
    const ceiling = (kind: PassKind) => {
      const node = median(level.nodeCpu[kind]);
      const redis = median(level.redisCpu[kind]);
      if (level.concurrency === 1) return 1e6 / (node + redis);
      return Math.min(1e6 / node, 1e6 / redis, (cpus().length * 1e6) / (node + redis));
    };
    lines.push(
      `    ${levelName(level).padEnd(14)} peer ${fmt(ceiling('peer'), 6)} j/s, wrapped ${fmt(ceiling('wrapped'), 6)} j/s, ` +
        `control ${fmt(ceiling('control'), 6)} j/s: wrapped / peer at most ${(ceiling('wrapped') / ceiling('peer')).toFixed(2)} where both are CPU-bound`,
    );
  }
  const goal = (what: string, ratios: number[], target: number) => {
    const value = median(ratios);
    lines.push(`  goal ${what} >= ${target.toFixed(2)}: ${spread(ratios)} -> ${value >= target ? 'MET' : 'MISSED'} (median)`);
  };
  for (const level of report.levels.filter((l) => l.toolMs === 0)) {
    const at = `at c=${level.concurrency}`;
    if (level.calls === 1) {
      goal(`wrapped/bare ${at}`, level.ratios.wrapped, level.concurrency === 1 ? goals.bare.c1 : goals.bare.c50);
      goal(`wrapped/peer ${at}`, roundRatios(level, 'wrapped', 'peer'), goals.peer);
      goal(`wrapped/control ${at}`, roundRatios(level, 'wrapped', 'control'), goals.control);
      if (level.concurrency === 1) {
        const cpu = level.nodeCpu.wrapped.map((value, r) => value / (level.nodeCpu.peer[r] ?? value));
        const met = median(cpu) <= goals.nodeCpuC1;
        lines.push(
          `  goal node CPU per job wrapped/peer ${at} <= ${goals.nodeCpuC1.toFixed(2)}: ${spread(cpu)} -> ${met ? 'MET' : 'MISSED'} (median)`,
        );
      }
    } else {
      goal(`wrapped/peer ${at}, ${level.calls}-call turn, one after another`, roundRatios(level, 'wrapped', 'peer'), goals.turnPeer);
      goal(`parallel/peer ${at}, ${level.calls}-call turn side by side`, roundRatios(level, 'parallel', 'peer'), goals.turnPeer);
    }
  }
  lines.push('  commands per job (untimed count pass, c=50):');
  for (const [kind, c] of report.commands) {
    const server = `${(total(c.server) / c.jobs).toFixed(1)} commands incl. inside scripts`;
    const scripts = (c.server.get('evalsha') ?? 0) + (c.server.get('eval') ?? 0) + (c.server.get('fcall') ?? 0);
    const evalsha = `${(scripts / c.jobs).toFixed(2)} scripts (FCALL or EVALSHA)`;
    const client = `${(total(c.wrapperConnection) / c.jobs).toFixed(2)} (${perJob(c.wrapperConnection, c.jobs)})`;
    lines.push(`    ${kind.padEnd(12)} server ${server}, ${evalsha}; own connection round trips ${client}`);
  }
  const mem = report.memory;
  if (mem === undefined) return lines;
  lines.push(
    '  memory:',
    `    settled receipt          MEMORY USAGE ${mem.receiptBytes} bytes (${mem.receiptFields} fields, result ${mem.receiptResultBytes} bytes)`,
    `    run index                MEMORY USAGE ${mem.runIndexBytes} bytes for ${mem.runIndexEntries} receipts ` +
      `(${(mem.runIndexBytes / Math.max(1, mem.runIndexEntries)).toFixed(0)} per receipt)`,
    `    breaker hash of that run MEMORY USAGE ${mem.breakerBytes} bytes`,
    `    completed job returnvalue: bare ${Buffer.byteLength(mem.returnValue.bare)} bytes, ` +
      `wrapped ${Buffer.byteLength(mem.returnValue.wrapped)} bytes`,
    `      bare    ${mem.returnValue.bare}`,
    `      wrapped ${mem.returnValue.wrapped}`,
    `    completed job hash       MEMORY USAGE bare ${mem.jobHashBytes.bare} bytes, wrapped ${mem.jobHashBytes.wrapped} bytes`,
  );
  return lines;
}
