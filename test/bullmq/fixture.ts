/**
 * Shared setup for wrapper tests: one Redis per file, real Queues and Workers
 * on it (or, with `useLanes({ queues: 'postgres' })`, on a PostgreSQL cluster
 * the file starts, with the receipts still on Redis), each test with its own
 * queue and key prefix, all closed afterwards.
 * Workers run in process (`lane.worker`) or as real `crash-worker` processes
 * (`lane.spawn`), which cleanup SIGKILLs before the connections they use close.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { createPostgresBackend, Job, Queue, QueueEvents, withBackend, Worker, type JobsOptions, type WorkerOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { z } from 'zod';
import { toolCallArgsHash, type ToolCallReceiptKey } from '../../src/core/index.js';
import { ReceiptStore, type ClaimResult, type ReceiptRecord } from '../../src/redis/index.js';
import {
  defineTool,
  withToolReceipts,
  type AnyToolDefinition,
  type DecisionEvent,
  type ToolReceiptsOptions,
  type ToolReceiptsProcessor,
} from '../../src/bullmq/index.js';
import { startPostgres, type PostgresHandle } from '../support/postgres.js';
import { startRedis, type RedisHandle } from '../support/redis.js';
import { spawnWorkerProcess, type WorkerProcess } from '../support/worker-process.js';
import { runnableScript } from '../support/compiled-scripts.js';

export interface Lane {
  /** The Redis server's URL. */
  readonly url: string;
  readonly prefix: string;
  /** The URL of the lane's Redis server, for child processes. */
  readonly redisUrl: string;
  readonly queueName: string;
  readonly queue: Queue;
  readonly events: QueueEvents;
  readonly redis: Redis;
  /** A receipt store on `redis` under this lane's prefix. */
  readonly store: ReceiptStore;
  /** A wrapped processor on its own connection plus a Worker running it. */
  worker(
    options: Omit<ToolReceiptsOptions, 'redis' | 'prefix'>,
    workerOptions?: Partial<WorkerOptions>,
  ): { processor: ToolReceiptsProcessor; worker: Worker };
  /**
   * A `crash-worker` process (test/fixtures/crash-worker.ts) on this lane's
   * Redis, prefix and queue; CRASH_AT=none and {@link CRASH_WORKER_TIMING}
   * unless `env` says otherwise. SIGKILLed after the test.
   */
  spawn(env?: Record<string, string>): Promise<WorkerProcess>;
  /** Add a job and wait until it completes or fails. */
  run(data: unknown, opts?: JobsOptions): Promise<Job>;
  add(data: unknown, opts?: JobsOptions): Promise<Job>;
  /**
   * Wait until the job completed or failed and return it reloaded; throws
   * when it is still neither after `timeoutMs`.
   */
  settle(job: Job, timeoutMs?: number): Promise<Job>;
  /** The one receipt of a run. */
  receipt(tenantId: string, runId: string): Promise<ReceiptRecord>;
}

export const silent = pino({ level: 'silent' });

/** Leases and locks for `crash-worker` processes: short enough for fast recovery, long enough for a loaded 2-core machine to keep renewing them. */
export const CRASH_WORKER_TIMING = { LEASE_MS: '600', LOCK_MS: '1000', STALLED_MS: '500' } as const;

/** Job options allowing retries, so a job that fails anyway failed unrecoverably. */
export const RETRYING = { attempts: 3, backoff: { type: 'fixed', delay: 100 } } as const;

/** Where a lane's BullMQ queue lives: on the receipts' Redis, or on PostgreSQL (BullMQ 6's `createPostgresBackend`). */
export type LaneQueues = 'redis' | 'postgres';

/** BullMQ's classes bound to the PostgreSQL backend; a connection runs the schema migrations it needs. */
const OnPostgres = withBackend(createPostgresBackend);
export const postgresConnection = (url: string) => ({ connectionString: url, migrate: true, max: 4 });

/**
 * `TEST_QUEUE_BACKEND` (redis or postgres): where lanes put their queues
 * unless a file says; vitest.config.ts runs a set of wrapper suites again
 * with their queues on PostgreSQL.
 */
function queuesUnderTest(): LaneQueues {
  const named = process.env['TEST_QUEUE_BACKEND'] ?? 'redis';
  if (named !== 'redis' && named !== 'postgres') throw new Error(`TEST_QUEUE_BACKEND must be redis or postgres; got ${named}`);
  return named;
}

export function useLanes(options: { queues?: LaneQueues } = {}) {
  const queues = options.queues ?? queuesUnderTest();
  let handle: RedisHandle;
  let postgres: PostgresHandle | undefined;
  const closers: Array<() => Promise<unknown>> = [];
  beforeAll(async () => {
    handle = await startRedis();
    if (queues === 'postgres') postgres = await startPostgres();
  });
  afterEach(async () => {
    // Reverse order: workers and worker processes (added last) stop before the connections they use close.
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  });
  afterAll(async () => {
    await handle?.stop();
    await postgres?.stop();
  });

  /** BullMQ's Queue, QueueEvents and Worker for this file's queues, and the connection each takes. */
  const bull = {
    queue: (name: string, prefix: string): Queue =>
      queues === 'postgres'
        ? (new OnPostgres.Queue(name, { connection: postgresConnection(postgres!.url) }) as unknown as Queue)
        : new Queue(name, { connection: connect(), prefix }),
    events: (name: string, prefix: string): QueueEvents =>
      queues === 'postgres'
        ? (new OnPostgres.QueueEvents(name, { connection: postgresConnection(postgres!.url) }) as unknown as QueueEvents)
        : new QueueEvents(name, { connection: connect(), prefix }),
    worker: (name: string, prefix: string, processor: ToolReceiptsProcessor, workerOptions: Partial<WorkerOptions>): Worker =>
      queues === 'postgres'
        ? (new OnPostgres.Worker(name, processor, {
            ...workerOptions,
            connection: postgresConnection(postgres!.url),
          } as ConstructorParameters<typeof OnPostgres.Worker>[2]) as unknown as Worker)
        : new Worker(name, processor, { connection: connect(), prefix, ...workerOptions }),
  };

  const connect = () => {
    const c = new Redis(handle.url, { maxRetriesPerRequest: null });
    closers.push(async () => c.disconnect());
    return c;
  };

  /** A fresh prefix, so tests never see each other's jobs, receipts or outbox. */
  return async function lane(): Promise<Lane> {
    const prefix = `${handle.prefix}${randomBytes(3).toString('hex')}`;
    // PostgreSQL has no key prefix: there each lane has a queue of its own.
    const queueName = queues === 'postgres' ? `tools-${prefix}` : 'tools';
    const redis = connect();
    const queue = bull.queue(queueName, prefix);
    const events = bull.events(queueName, prefix);
    await events.waitUntilReady();
    closers.push(
      () => queue.close(),
      () => events.close(),
    );
    const store = new ReceiptStore({ redis, prefix });

    const settle = async (job: Job, timeoutMs = 30_000) => {
      // Rejects when the job fails (or on timeout); either way the reloaded job says what happened.
      await job.waitUntilFinished(events, timeoutMs).catch(() => undefined);
      const reloaded = await Job.fromId(queue, job.id!);
      const state = await reloaded?.getState();
      if (state !== 'completed' && state !== 'failed') {
        throw new Error(`job ${job.id} did not finish within ${timeoutMs} ms; it is ${state}`);
      }
      return reloaded!;
    };
    const add = (data: unknown, opts?: JobsOptions) => queue.add('call', data, opts);
    return {
      url: handle.url,
      prefix,
      redisUrl: handle.url,
      queueName,
      queue,
      events,
      redis,
      store,
      worker(options, workerOptions = {}) {
        const processor = withToolReceipts({ logger: silent, ...options, redis: connect(), prefix });
        const worker = bull.worker(queueName, prefix, processor, workerOptions);
        processor.attach(worker);
        worker.on('error', () => undefined);
        closers.push(() => worker.close(true));
        return { processor, worker };
      },
      async spawn(env = {}) {
        const worker = await spawnWorkerProcess('crash-worker', {
          REDIS_URL: handle.url,
          PREFIX: prefix,
          QUEUE: queueName,
          ...(queues === 'postgres' ? { POSTGRES_URL: postgres!.url } : {}),
          CRASH_AT: 'none',
          ...CRASH_WORKER_TIMING,
          ...env,
        });
        closers.push(() => worker.signal('SIGKILL'));
        return worker;
      },
      add,
      settle,
      run: async (data, opts) => settle(await add(data, opts)),
      async receipt(tenantId, runId) {
        const records = await store.listRun(tenantId, runId);
        expect(records).toHaveLength(1);
        return records[0]!;
      },
    };
  };
}

/**
 * An opaque, non-destructive tool taking `{ n: number }` that counts its runs
 * and throws what `fail` makes of the run number, or succeeds with
 * `ok after <runs>` when it makes nothing. `flags` override the defaults
 * (`destructive: undefined` leaves MCP's default, destructive).
 */
export function flakyTool(
  name: string,
  fail: (n: number) => Error | undefined,
  flags: { effect?: 'opaque' | 'resumable'; destructive?: boolean; idempotent?: boolean } = {},
) {
  let runs = 0;
  const tool = defineTool({
    name,
    input: z.object({ n: z.number() }),
    effect: 'opaque',
    destructive: false,
    ...flags,
    execute() {
      runs++;
      const error = fail(runs);
      if (error) throw error;
      return `ok after ${runs}`;
    },
  });
  return { tool, runs: () => runs };
}

/** A call for a job's `calls` list. */
export const call = (name: string, input: unknown, id = `toolu_${randomBytes(4).toString('hex')}`) => ({ id, name, input });

/** Job data with fresh tenant/run ids unless given. */
export const jobData = <C>(calls: C[], ids: { tenantId?: string; runId?: string } = {}) => ({
  tenantId: ids.tenantId ?? 'acme',
  runId: ids.runId ?? `run-${randomBytes(4).toString('hex')}`,
  calls,
});

/** The decisions a `crash-worker` process reported, in order. */
export const decisionsOf = (w: WorkerProcess): DecisionEvent[] =>
  w.messages.filter((m) => m.type === 'decision').map((m) => m.event as DecisionEvent);
/** Decisions as `kind` or `kind@attempt`, e.g. `['wait', 'execute@2']`. */
export const decisionTrail = (w: WorkerProcess) =>
  decisionsOf(w).map((d) => (d.attempt === undefined ? d.decision : `${d.decision}@${d.attempt}`));
/** A takeover worker may first find the dead attempt's lease still live and wait; nothing else may precede its verdict. */
export const expectWaitsThen = (trail: string[], verdict: string) => {
  expect(trail.at(-1)).toBe(verdict);
  expect(trail.slice(0, -1).every((d) => d === 'wait')).toBe(true);
};

const claimOnce = fileURLToPath(new URL('../fixtures/claim-once.ts', import.meta.url));

/**
 * Another delivery's claim, run in a child process while this one waits for
 * it synchronously: this process is stalled meanwhile (no heartbeat leaves
 * it), as a SIGSTOPped worker would be. The child waits for the lease to lapse.
 */
export function claimWhileStalled(env: Record<string, string>): ClaimResult {
  const { script, execArgv } = runnableScript(claimOnce);
  const out = execFileSync(process.execPath, [...execArgv, script], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return JSON.parse(out) as ClaimResult;
}

/**
 * An opaque `send_email` whose attempt stalls mid-effect while another
 * delivery's claim (see {@link claimWhileStalled}) reports it ambiguous; then
 * `afterVerdict` runs and the tool returns, so its settle comes late.
 */
export function sendEmailSettlingLate(
  l: Lane,
  afterVerdict: (key: ToolCallReceiptKey) => Promise<void> = async () => {},
): { tool: AnyToolDefinition; verdict: () => ClaimResult | undefined } {
  let verdict: ClaimResult | undefined;
  const tool = defineTool({
    name: 'send_email',
    input: z.object({ to: z.string() }),
    effect: 'opaque',
    destructive: false,
    async execute(args, ctx) {
      const key = { tenantId: ctx.tenantId, runId: ctx.runId, toolName: 'send_email', argsHash: await toolCallArgsHash(args) };
      verdict = claimWhileStalled({ REDIS_URL: l.redisUrl, PREFIX: l.prefix, KEY: JSON.stringify(key), EFFECT: 'opaque' });
      await afterVerdict(key);
      return `sent to ${args.to}`;
    },
  });
  return { tool, verdict: () => verdict };
}

/**
 * A queue named `name` under `prefix`, its events (ready), and a Worker
 * running `processor` on it, attached; every failed delivery's error is
 * collected in `failures`. Each is closed through `closers`, worker first.
 */
export async function workerOnQueue(
  name: string,
  prefix: string,
  connect: () => Redis,
  processor: ToolReceiptsProcessor,
  closers: Array<() => Promise<unknown>>,
): Promise<{ queue: Queue; events: QueueEvents; failures: unknown[] }> {
  const queue = new Queue(name, { connection: connect(), prefix });
  const events = new QueueEvents(name, { connection: connect(), prefix });
  await events.waitUntilReady();
  const worker = new Worker(name, processor, { connection: connect(), prefix });
  processor.attach(worker);
  worker.on('error', () => undefined);
  const failures: unknown[] = [];
  worker.on('failed', (_job, error) => failures.push(error));
  closers.push(
    () => queue.close(),
    () => events.close(),
    () => worker.close(true),
  );
  return { queue, events, failures };
}
