/**
 * Workers for the failover tests: in-process BullMQ Workers running the
 * wrapper on Sentinel (or Cluster) connections, with an outbox the test
 * owns, so effects are counted outside Redis and survive any failover.
 */
import { Worker, type WorkerOptions } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import { z } from 'zod';
import { type DurabilityOptions } from '../../src/redis/index.js';
import { defineTool, withToolReceipts, type AnyToolDefinition } from '../../src/bullmq/index.js';
import { silent } from '../bullmq/fixture.js';

/** What a worker saw happen to one job. */
export interface JobOutcome {
  readonly kind: 'completed' | 'failed';
  readonly jobId: string | undefined;
  readonly error?: string;
}

/**
 * Where the test tools' effects land, in this process, so they survive any
 * failover. A repeated opaque effect is a duplicate. A resumable step that
 * runs again is a duplicate only when its record had been acknowledged
 * (`ctx.step` had returned): a step cut off before its record landed runs
 * again by the resumable contract, like after a worker crash.
 */
export class Outbox {
  readonly effects: string[] = [];
  readonly duplicates: string[] = [];
  /** Steps run again after an interruption, before their record was acknowledged. */
  redone = 0;
  private readonly confirmed = new Set<string>();

  effect(name: string, label = name): void {
    if (this.effects.includes(name)) this.duplicates.push(name);
    this.effects.push(label);
  }

  step(name: string): void {
    if (this.confirmed.has(name)) this.duplicates.push(name);
    else if (this.effects.includes(name)) this.redone += 1;
    this.effects.push(name);
  }

  confirm(name: string): void {
    this.confirmed.add(name);
  }
}

const pause = (ms: number) => (ms > 0 ? new Promise((r) => setTimeout(r, ms)) : undefined);

/** An opaque tool whose effect is sending to `to`; the outbox line is `label` when given. */
export function sendEmailTool(outbox: Outbox, label?: string, delayMs = 0) {
  return defineTool({
    name: 'send_email',
    input: z.object({ to: z.string() }),
    effect: 'opaque',
    destructive: false,
    async execute(args) {
      await pause(delayMs);
      outbox.effect(args.to, label);
      return { sent: args.to };
    },
  });
}

/** A resumable tool with two steps, `<id>:create` and `<id>:notify`. */
export function createTicketTool(outbox: Outbox, delayMs = 0) {
  const step = async (ctx: { step<T>(name: string, fn: () => Promise<T>): Promise<T> }, name: string) => {
    await ctx.step(name.slice(name.lastIndexOf(':') + 1), async () => {
      await pause(delayMs);
      outbox.step(name);
      return name;
    });
    outbox.confirm(name);
  };
  return defineTool({
    name: 'create_ticket',
    input: z.object({ id: z.string() }),
    effect: 'resumable',
    destructive: false,
    async execute(args, ctx) {
      await step(ctx, `${args.id}:create`);
      await step(ctx, `${args.id}:notify`);
      return { ticket: args.id };
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

export interface FailoverWorkerOptions {
  readonly name: string;
  readonly tools: AnyToolDefinition[];
  readonly durability: DurabilityOptions | undefined;
  readonly prefix: string;
  /** BullMQ's prefix when it differs (a Cluster needs a hash tag: `{bull}`). */
  readonly bullPrefix?: string;
  readonly worker?: Partial<WorkerOptions>;
}

/**
 * A Worker on `connect()`ed connections running the wrapper (2 s leases)
 * with `tools`.
 */
export function failoverWorker(
  connect: (options: { maxRetriesPerRequest: number | null }) => Redis | Cluster,
  queueName: string,
  options: FailoverWorkerOptions,
): FailoverWorker {
  const receipts = connect({ maxRetriesPerRequest: 3 });
  const blocking = connect({ maxRetriesPerRequest: null });
  const processor = withToolReceipts({
    redis: receipts,
    tools: options.tools,
    prefix: options.prefix,
    leaseMs: 2000,
    logger: silent,
    ...(options.durability ? { durability: options.durability } : {}),
  });
  const worker = new Worker(queueName, processor, {
    connection: blocking,
    prefix: options.bullPrefix ?? options.prefix,
    ...options.worker,
  });
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
