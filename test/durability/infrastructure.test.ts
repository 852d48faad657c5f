/**
 * Infrastructure is not the tool's fault: a step write the replica did not
 * acknowledge cuts the tool off (the replica is back before anything else is
 * written), but the breaker counts nothing, the model is
 * told nothing, and the job retries as for any infrastructure error (with
 * `durability.not_acknowledged`, not `tool.failed`). Its next delivery takes
 * the resumable call over from the steps the primary kept, each step once.
 */
import { Queue, QueueEvents, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type ToolJobResult } from '../../src/bullmq/index.js';
import { BreakerStore } from '../../src/redis/index.js';
import type { LocalRedis } from '../support/redis-process.js';
import { startPrimaryWithReplica, waitCaughtUp, withNode } from '../support/redis-cluster.js';
import { uniquePrefix } from '../support/redis.js';
import { sentinelSkipReason } from '../support/redis-sentinel.js';
import { failoverWorker, Outbox } from './support.js';

const skip = sentinelSkipReason();

describe.skipIf(skip !== undefined)('an unacknowledged step write', () => {
  let primary: LocalRedis;
  let replica: LocalRedis;
  const clients: Redis[] = [];
  const prefix = uniquePrefix();
  beforeAll(async () => {
    ({ primary, replica } = await startPrimaryWithReplica(prefix));
  });
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await replica?.stop();
    await primary?.stop();
  });
  const connect = (options: { maxRetriesPerRequest: number | null }) => {
    const c = new Redis(primary.url, options);
    clients.push(c);
    return c;
  };

  it('is retried as infrastructure: not counted by the breaker, not told to the model, and each step runs once', async () => {
    const outbox = new Outbox();
    let cut = false;
    const tool = defineTool({
      name: 'create_ticket',
      input: z.object({ id: z.string() }),
      effect: 'resumable',
      destructive: false,
      async execute(args, ctx) {
        await ctx.step('create', async () => {
          outbox.step(`${args.id}:create`);
          return 'created';
        });
        if (!cut) {
          // The replica stops taking writes between the two steps: the second step's record is not acknowledged.
          cut = true;
          await replica.pause();
          await withNode(primary, (admin) => admin.call('CLIENT', 'KILL', 'TYPE', 'replica'));
        }
        try {
          await ctx.step('notify', async () => {
            outbox.step(`${args.id}:notify`);
            return 'notified';
          });
        } catch (error) {
          // The replica is back before the wrapper records anything more: only the step's write went unacknowledged.
          await replica.resume();
          await waitCaughtUp(primary, replica);
          throw error;
        }
        return { ticket: args.id };
      },
    });
    const queueName = 'infra';
    const queue = new Queue(queueName, { connection: connect({ maxRetriesPerRequest: null }), prefix });
    const events = new QueueEvents(queueName, { connection: connect({ maxRetriesPerRequest: null }), prefix });
    await events.waitUntilReady();
    const worker = failoverWorker(connect, queueName, { name: 'w', tools: [tool], durability: { replicas: 1, timeoutMs: 300 }, prefix });
    try {
      const data = { tenantId: 'acme', runId: 'run-infra', calls: [{ id: 'toolu_1', name: 'create_ticket', input: { id: 'T-1' } }] };
      const job = await queue.add('call', data, { attempts: 5, backoff: { type: 'fixed', delay: 500 } });
      const first = await worker.next();
      expect(first.kind).toBe('failed');
      expect(first.error).toMatch(/^durability\.not_acknowledged /);

      await job.waitUntilFinished(events, 60_000);
      const done = (await queue.getJob(job.id!)) as Job;
      const results = (done.returnvalue as ToolJobResult).results;
      // The model sees the call's result, never a failure of the tool.
      expect(results).toEqual([expect.objectContaining({ outcome: 'executed', content: JSON.stringify({ ticket: 'T-1' }) })]);
      expect(outbox.duplicates).toEqual([]);
      expect(outbox.effects).toEqual(['T-1:create', 'T-1:notify']);
      const breaker = new BreakerStore({ redis: connect({ maxRetriesPerRequest: 1 }), prefix });
      expect(await clients.at(-1)!.hgetall(breaker.redisKey('acme', 'run-infra'))).toEqual({});
    } finally {
      await worker.close();
      await events.close();
      await queue.close();
    }
  });
});
