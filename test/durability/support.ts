/**
 * Workers for the failover tests: in-process BullMQ Workers running the
 * wrapper on Sentinel (or Cluster) connections, with an outbox the test
 * owns, so effects are counted outside Redis and survive any failover.
 */
import { Worker } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import { z } from 'zod';
import { defineTool, withToolReceipts, type DurabilityOptions } from '../../src/index.js';
import { silent } from '../bullmq/fixture.js';

/** What a worker saw happen to one job. */
export interface JobOutcome {
  readonly kind: 'completed' | 'failed';
  readonly jobId: string | undefined;
  readonly error?: string;
}

/** An opaque tool whose effect is one line in `outbox`, naming the worker that ran it. */
export function sendEmailTool(outbox: string[], worker: string) {
  return defineTool({
    name: 'send_email',
    input: z.object({ to: z.string() }),
    effect: 'opaque',
    destructive: false,
    async execute(args) {
      outbox.push(worker);
      return { sent: args.to };
    },
  });
}

function errorCode(error: unknown): string {
  const { code, cause } = error as { code?: unknown; cause?: unknown };
  if (typeof code === 'string') return code;
  return cause === undefined ? '' : errorCode(cause);
}

export interface FailoverWorker {
  /** The next job outcome this worker reports. */
  next(timeoutMs?: number): Promise<JobOutcome>;
  /** The first outcome (from now on, or already seen and not yet taken) matching `match`. */
  until(match: (o: JobOutcome) => boolean, timeoutMs?: number): Promise<JobOutcome>;
  /** Stops the worker without waiting for its job, and drops its connections. */
  close(): Promise<void>;
}

/**
 * A Worker on `connect()`ed connections running the wrapper with
 * `sendEmailTool(outbox, name)` with 2 s leases.
 */
export function failoverWorker(
  connect: (options: { maxRetriesPerRequest: number | null }) => Redis | Cluster,
  queueName: string,
  options: { outbox: string[]; name: string; durability: DurabilityOptions | undefined; prefix: string; bullPrefix?: string },
): FailoverWorker {
  const receipts = connect({ maxRetriesPerRequest: 3 });
  const blocking = connect({ maxRetriesPerRequest: null });
  const processor = withToolReceipts({
    redis: receipts,
    tools: [sendEmailTool(options.outbox, options.name)],
    prefix: options.prefix,
    leaseMs: 2000,
    logger: silent,
    ...(options.durability ? { durability: options.durability } : {}),
  });
  const worker = new Worker(queueName, processor, { connection: blocking, prefix: options.bullPrefix ?? options.prefix });
  processor.attach(worker);
  worker.on('error', () => undefined);
  const seen: JobOutcome[] = [];
  const waiters: Array<() => void> = [];
  const push = (o: JobOutcome) => {
    seen.push(o);
    for (const wake of waiters.splice(0)) wake();
  };
  worker.on('completed', (job) => push({ kind: 'completed', jobId: job.id }));
  worker.on('failed', (job, error) => push({ kind: 'failed', jobId: job?.id, error: `${errorCode(error)} ${error.message}` }));

  const until = async (match: (o: JobOutcome) => boolean, timeoutMs = 30_000): Promise<JobOutcome> => {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const index = seen.findIndex(match);
      if (index >= 0) return seen.splice(0, index + 1).at(-1)!;
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`worker ${options.name}: no matching job outcome within ${timeoutMs} ms; saw ${JSON.stringify(seen)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  };
  return {
    next: (timeoutMs) => until(() => true, timeoutMs),
    until,
    async close() {
      await Promise.race([worker.close(true).catch(() => undefined), new Promise((r) => setTimeout(r, 2000))]);
      receipts.disconnect();
      blocking.disconnect();
    },
  };
}
