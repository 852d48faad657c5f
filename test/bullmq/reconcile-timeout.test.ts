/**
 * A reconcile write Redis does not answer reaches the wrapper as
 * `redis.timeout`, exactly as a claim's does: Redis is frozen (SIGSTOP) by
 * the tool's own reconcile, so the verdict it returns is written to a
 * server that answers nothing within the keyspace's `commandTimeoutMs`.
 * The delivery fails as infrastructure (retried, not the tool's failure),
 * and once Redis wakes the retry replays the verdict that landed meanwhile.
 */
import { randomBytes } from 'node:crypto';
import { Job } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { toolCallArgsHash } from '../../src/core/index.js';
import { defineTool, withToolReceipts, type ToolJobResult } from '../../src/bullmq/index.js';
import { ReceiptStore } from '../../src/redis/index.js';
import { faultTestsSupported } from '../support/redis.js';
import { useRedis, waitForLeaseExpiry } from '../support/redis-fixture.js';
import { call, silent, workerOnQueue } from './fixture.js';

const redis = useRedis();
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

describe('a reconcile verdict Redis does not answer', () => {
  it.skipIf(!faultTestsSupported())(
    'fails the delivery with redis.timeout, as a claim would, and the retry replays the verdict',
    async () => {
      const prefix = `${redis.handle().prefix}${randomBytes(3).toString('hex')}`;
      const connect = () => {
        const c = new Redis(redis.handle().url, { maxRetriesPerRequest: null });
        closers.push(async () => c.disconnect());
        return c;
      };
      const input = { to: 'ops@example.com' };
      const data = { tenantId: 'acme', runId: `run-${randomBytes(4).toString('hex')}`, calls: [call('notify', input)] };
      const key = { tenantId: data.tenantId, runId: data.runId, toolName: 'notify', argsHash: await toolCallArgsHash(input) };

      // Attempt 1 was claimed by a worker that is gone: its opaque lease lapses.
      const store = new ReceiptStore({ redis: connect(), prefix });
      await store.claim(key, { effect: 'opaque', leaseMs: 50, owner: 'lost-worker' });
      await waitForLeaseExpiry(store, key);

      let asked = 0;
      let woken: Promise<void> = Promise.resolve();
      closers.push(() => woken); // Redis is awake again before the connections close
      const executed: number[] = [];
      const notify = defineTool({
        name: 'notify',
        input: z.object({ to: z.string() }),
        effect: 'opaque',
        destructive: false,
        execute: (_args, ctx) => void executed.push(ctx.attempt),
        async reconcile() {
          asked++;
          if (asked === 1) {
            // Frozen before the verdict is written; woken well after the verdict's write has timed out.
            await redis.handle().pause();
            woken = new Promise((resolve) => setTimeout(resolve, 1_500)).then(() => redis.handle().resume());
          }
          return { status: 'completed', result: { notified: true } };
        },
      });

      const processor = withToolReceipts({ redis: connect(), prefix, tools: [notify], logger: silent, commandTimeoutMs: 300 });
      const { queue, events, failures } = await workerOnQueue('reconcile-timeout', prefix, connect, processor, closers);

      const job = await queue.add('call', data, { attempts: 3, backoff: { type: 'fixed', delay: 100 } });
      await job.waitUntilFinished(events, 60_000);
      const done = (await Job.fromId(queue, job.id!))!;

      expect(failures).toEqual([
        expect.objectContaining({ code: 'redis.timeout', step: 'reconcileSettle', redisKey: store.redisKey(key), sent: true }),
      ]);
      expect(done.attemptsMade).toBe(2);
      // The verdict landed when Redis woke: the retry replays it, and the tool never ran.
      expect((done.returnvalue as ToolJobResult).results).toMatchObject([{ outcome: 'replayed', content: '{"notified":true}' }]);
      expect(executed).toEqual([]);
      expect(asked).toBe(1);
      expect(await store.inspect(key)).toMatchObject({ status: 'completed', attempts: 1 });
    },
  );
});
