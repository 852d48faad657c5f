/**
 * A frozen Redis (SIGSTOP) under receipts on node-redis, whose own command
 * timeout covers only a command waiting in its queue, not a written one's
 * reply: the store's `commandTimeoutMs` bounds the claim all the same. The
 * receipts live on a Redis of their own and BullMQ's queue on another, so
 * the job's failure is seen while the receipts' server is still frozen: it
 * fails with `redis.timeout` within the deadline and the lost-claim release's
 * budget. After SIGCONT the claim lands, the release tries written behind it
 * settle it as never started, and the next delivery runs the email once.
 */
import { Job, Worker } from 'bullmq';
import { createClient } from 'redis';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, withToolReceipts, type ToolJobResult } from '../../src/bullmq/index.js';
import type { RedisConnection } from '../../src/redis/connection/connection.js';
import { LOST_CLAIM_RELEASE_BUDGET_MS, RedisTimeoutError } from '../../src/redis/index.js';
import { faultTestsSupported } from '../support/redis.js';
import { useRedis } from '../support/redis-fixture.js';
import { call, silent, useLanes } from './fixture.js';

const lane = useLanes();
const receiptsRedis = useRedis();
const faults = faultTestsSupported();
const closers: Array<() => Promise<unknown>> = [];
let frozen = false;

afterEach(async () => {
  if (frozen) await receiptsRedis.handle().resume();
  frozen = false;
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

const COMMAND_TIMEOUT_MS = 500;

describe.skipIf(!faults)('receipts on node-redis when Redis freezes', () => {
  it('fail the claim with redis.timeout within commandTimeoutMs (and the release budget), and after SIGCONT the next delivery sends once', async () => {
    const l = await lane();
    const sent: string[] = [];
    let frozeAt = 0;
    const freeze = defineTool({
      name: 'prepare',
      input: z.object({}),
      effect: 'opaque',
      readOnly: true,
      async execute() {
        if (frozeAt === 0) {
          await receiptsRedis.handle().pause();
          frozen = true;
          frozeAt = performance.now();
        }
        return 'prepared';
      },
    });
    const email = defineTool({
      name: 'send_email',
      input: z.object({ to: z.string() }),
      effect: 'opaque',
      execute: ({ to }) => void sent.push(to),
    });
    const client = createClient({ url: receiptsRedis.handle().url });
    client.on('error', () => undefined);
    await client.connect();
    closers.push(async () => client.destroy());
    const processor = withToolReceipts({
      redis: client as unknown as RedisConnection,
      prefix: receiptsRedis.handle().prefix,
      tools: [freeze, email],
      logger: silent,
      commandTimeoutMs: COMMAND_TIMEOUT_MS,
    });
    await processor.store.listAmbiguous(); // connected, before the freeze
    const worker = new Worker(l.queueName, processor, { connection: l.redis.duplicate(), prefix: l.prefix });
    processor.attach(worker);
    worker.on('error', () => undefined);
    closers.push(() => worker.close(true));
    const failed = new Promise<{ error: unknown; atMs: number }>((resolve) =>
      worker.once('failed', (_job, error) => resolve({ error, atMs: performance.now() })),
    );

    const data = {
      tenantId: 'acme',
      runId: 'run-frozen-node-redis',
      calls: [call('prepare', {}), call('send_email', { to: 'ada@example.com' })],
    };
    const job = await l.add(data, { attempts: 3, backoff: { type: 'fixed', delay: 500 } });
    const first = await Promise.race([failed, new Promise<undefined>((r) => setTimeout(() => r(undefined), 30_000))]);
    // Failed while the receipts' Redis is still frozen: the deadline, not SIGCONT, ended it.
    expect(first).toBeDefined();
    expect(frozen).toBe(true);
    const { error, atMs } = first!;
    expect(error).toBeInstanceOf(RedisTimeoutError);
    expect(error).toMatchObject({ code: 'redis.timeout', step: 'claim', tool: 'send_email', sent: true });
    // Redis stayed silent through every release try: the release's outcome is unknown to the worker.
    expect((error as RedisTimeoutError).releases.map((r) => r.outcome)).toEqual(['unknown']);
    expect(atMs - frozeAt).toBeGreaterThanOrEqual(COMMAND_TIMEOUT_MS);
    expect(atMs - frozeAt).toBeLessThan(COMMAND_TIMEOUT_MS + LOST_CLAIM_RELEASE_BUDGET_MS + 3_000);
    expect(sent).toEqual([]);

    await receiptsRedis.handle().resume();
    frozen = false;
    const done = await l.settle(job, 30_000);
    expect(done.finishedOn).toBeDefined();
    expect((done.returnvalue as ToolJobResult).results.map((r) => r.outcome)).toEqual(['executed', 'executed']);
    expect(sent).toEqual(['ada@example.com']);
    // The lost claim landed on SIGCONT and a release try written behind it settled it as never started.
    const [receipt] = (await processor.store.listRun('acme', data.runId)).filter((r) => r.key.toolName === 'send_email');
    expect(receipt).toMatchObject({ status: 'completed', attempts: 2 });
    expect(await processor.store.listAmbiguous()).toEqual([]);
    expect((await Job.fromId(l.queue, job.id!))?.attemptsMade).toBe(2);
  });
});
