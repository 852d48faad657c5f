/**
 * A claim whose reply was lost releases itself. Redis is frozen (SIGSTOP)
 * just before a call's claim is sent on a receipts connection with ioredis'
 * `commandTimeout`, and woken (SIGCONT) while the worker is still trying to
 * release what that claim may have done. The claim lands when Redis wakes,
 * the release right after it: the job fails its delivery with
 * `redis.timeout`, BullMQ retries it, the retry runs the email exactly once,
 * and no receipt is left ambiguous. Each way a claim is sent: on its own,
 * carried by the complete of the call before (`complete-claim-5.lua`), and
 * for a group of calls side by side (`claim-group-N.lua`).
 */
import { randomBytes } from 'node:crypto';
import { Job } from 'bullmq';
import { Redis, type RedisOptions } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, withToolReceipts, type ToolJobResult } from '../../src/bullmq/index.js';
import { faultTestsSupported } from '../support/redis.js';
import { useRedis } from '../support/redis-fixture.js';
import { call, silent, workerOnQueue } from './fixture.js';

const redis = useRedis();
const faults = faultTestsSupported();
const closers: Array<() => Promise<unknown>> = [];
let frozen = false;

afterEach(async () => {
  if (frozen) await redis.handle().resume();
  frozen = false;
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/** Freezes Redis once, and wakes it after `forMs` (the claim times out at 300 ms meanwhile). */
function freezer(forMs = 1_500) {
  let done = false;
  return async () => {
    if (done) return;
    done = true;
    await redis.handle().pause();
    frozen = true;
    setTimeout(() => {
      void redis
        .handle()
        .resume()
        .then(() => (frozen = false));
    }, forMs);
  };
}

const ways = [
  { name: 'a claim of its own', emails: 1, freezeBefore: 'read-only' },
  { name: 'a claim carried by the complete of the call before', emails: 1, freezeBefore: 'receipt' },
  { name: 'the claim of a side-by-side group', emails: 2, freezeBefore: 'read-only' },
] as const;

describe('a claim whose reply was lost', () => {
  for (const way of ways) {
    it.skipIf(!faults)(`is released once Redis answers, and the retry sends once: ${way.name}`, async () => {
      const freeze = freezer();
      const sent: string[] = [];
      const prepare = defineTool({
        name: 'prepare',
        input: z.object({}),
        effect: 'opaque',
        destructive: false,
        readOnly: way.freezeBefore === 'read-only',
        async execute() {
          await freeze();
          return 'prepared';
        },
      });
      const email = defineTool({
        name: 'send_email',
        input: z.object({ to: z.string() }),
        effect: 'opaque',
        destructive: false,
        parallel: way.emails > 1,
        execute: (args) => void sent.push(args.to),
      });
      const prefix = `${redis.handle().prefix}${randomBytes(3).toString('hex')}`;
      const connect = (options: RedisOptions = {}) => {
        const c = new Redis(redis.handle().url, { maxRetriesPerRequest: null, ...options });
        closers.push(async () => c.disconnect());
        return c;
      };
      const receipts = connect({ commandTimeout: 300, maxRetriesPerRequest: 1 });
      const processor = withToolReceipts({ redis: receipts, prefix, tools: [prepare, email], logger: silent });
      await receipts.ping();
      const { queue, events, failures } = await workerOnQueue('lost', prefix, connect, processor, closers);

      const to = Array.from({ length: way.emails }, (_, i) => `user${i}@example.com`);
      const data = {
        tenantId: 'acme',
        runId: `run-${randomBytes(4).toString('hex')}`,
        calls: [call('prepare', {}), ...to.map((t) => call('send_email', { to: t }))],
      };
      const job = await queue.add('call', data, { attempts: 3, backoff: { type: 'fixed', delay: 100 } });
      await job.waitUntilFinished(events, 60_000);
      const done = (await Job.fromId(queue, job.id!))!;

      expect(done.attemptsMade).toBe(2);
      expect(failures).toEqual([
        expect.objectContaining({
          code: 'redis.timeout',
          step: way.name.includes('carried') ? 'completeClaim' : way.emails > 1 ? 'claimGroup' : 'claim',
        }),
      ]);
      const released = (failures[0] as { releases: { outcome: string }[] }).releases;
      expect(released.map((r) => r.outcome)).toEqual(to.map(() => 'released'));
      // The call before ran once: read-only it runs again; with a receipt, its complete landed with the carried claim.
      const before = way.freezeBefore === 'receipt' ? 'replayed' : 'executed';
      expect((done.returnvalue as ToolJobResult).results.map((r) => r.outcome)).toEqual([before, ...to.map(() => 'executed')]);
      expect(sent.sort()).toEqual(to);
      expect(await processor.store.listAmbiguous()).toEqual([]);
      const receiptsOfRun = await processor.store.listRun(data.tenantId, data.runId);
      for (const r of receiptsOfRun.filter((x) => x.key.toolName === 'send_email'))
        expect(r).toMatchObject({ status: 'completed', attempts: 2 });
    });
  }
});
