/**
 * Shared setup for wrapper tests: one Redis per file, real Queues and Workers
 * on it, each test with its own queue and key prefix, all closed afterwards.
 */
import { randomBytes } from 'node:crypto';
import { Job, Queue, QueueEvents, Worker, type JobsOptions, type WorkerOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { withToolReceipts, type ToolReceiptsOptions, type ToolReceiptsProcessor } from '../../src/index.js';
import { startRedis, type RedisHandle } from '../support/redis.js';

export interface Lane {
  readonly prefix: string;
  readonly queueName: string;
  readonly queue: Queue;
  readonly redis: Redis;
  /** A wrapped processor on its own connection plus a Worker running it. */
  worker(
    options: Omit<ToolReceiptsOptions, 'redis' | 'prefix'>,
    workerOptions?: Partial<WorkerOptions>,
  ): { processor: ToolReceiptsProcessor; worker: Worker };
  /** Add a job and wait until it completes or fails. */
  run(data: unknown, opts?: JobsOptions): Promise<Job>;
  add(data: unknown, opts?: JobsOptions): Promise<Job>;
  /** Wait until the job completes or fails; returns it reloaded. */
  settle(job: Job, timeoutMs?: number): Promise<Job>;
}

export const silent = pino({ level: 'silent' });

export function useLanes() {
  let handle: RedisHandle;
  const closers: Array<() => Promise<unknown>> = [];
  beforeAll(async () => {
    handle = await startRedis();
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  });
  afterAll(async () => {
    await handle?.stop();
  });

  const connect = () => {
    const c = new Redis(handle.url, { maxRetriesPerRequest: null });
    closers.push(async () => c.disconnect());
    return c;
  };

  return async function lane(): Promise<Lane> {
    const prefix = `${handle.prefix}${randomBytes(3).toString('hex')}`;
    const queueName = 'tools';
    const redis = connect();
    const queue = new Queue(queueName, { connection: connect(), prefix });
    const events = new QueueEvents(queueName, { connection: connect(), prefix });
    await events.waitUntilReady();
    closers.push(() => queue.close(), () => events.close());

    const settle = async (job: Job, timeoutMs = 30_000) => {
      await Promise.race([
        job.waitUntilFinished(events).catch(() => undefined),
        new Promise((_, reject) => setTimeout(() => reject(new Error(`job ${job.id} did not finish in ${timeoutMs} ms`)), timeoutMs)),
      ]);
      return (await Job.fromId(queue, job.id!))!;
    };
    const add = (data: unknown, opts?: JobsOptions) => queue.add('call', data, opts);
    return {
      prefix,
      queueName,
      queue,
      redis,
      worker(options, workerOptions = {}) {
        const processor = withToolReceipts({ logger: silent, ...options, redis: connect(), prefix });
        const worker = new Worker(queueName, processor, { connection: connect(), prefix, ...workerOptions });
        processor.attach(worker);
        worker.on('error', () => undefined);
        closers.push(() => worker.close(true));
        return { processor, worker };
      },
      add,
      settle,
      run: async (data, opts) => settle(await add(data, opts)),
    };
  };
}

/** A call for a job's `calls` list. */
export const call = (name: string, input: unknown, id = `toolu_${randomBytes(4).toString('hex')}`) => ({ id, name, input });

/** Job data with fresh tenant/run ids unless given. */
export const jobData = (calls: unknown[], ids: { tenantId?: string; runId?: string } = {}) => ({
  tenantId: ids.tenantId ?? 'acme',
  runId: ids.runId ?? `run-${randomBytes(4).toString('hex')}`,
  calls,
});
