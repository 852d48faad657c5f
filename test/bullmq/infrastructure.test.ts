/**
 * Infrastructure is not the tool's fault, and misconfiguration is not
 * retried: a step write Redis did not answer fails the job with
 * `redis.timeout` (retryable), never with `tool.failed`, and neither the
 * breaker nor the model hears of it; `durability.unsupported` fails the job
 * unrecoverably on its first attempt.
 */
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, withToolReceipts } from '../../src/bullmq/index.js';
import { toolCallArgsHash } from '../../src/core/index.js';
import { RedisTimeoutError } from '../../src/redis/index.js';
import { hasWaitAof } from '../../src/redis/durability/durability.js';
import { testJob } from '../../src/testing/index.js';
import { faultTestsSupported } from '../support/redis.js';
import { useRedis } from '../support/redis-fixture.js';
import { call, jobData, RETRYING, useLanes } from './fixture.js';

const redis = useRedis();
const lane = useLanes();
const faults = faultTestsSupported();
let frozen = false;

afterEach(async () => {
  if (frozen) await redis.handle().resume();
  frozen = false;
});

describe('infrastructure failures', () => {
  it.skipIf(!faults)(
    'a step write Redis did not answer fails the job with redis.timeout, not counted and not told to the model',
    async () => {
      const steps: string[] = [];
      const tool = defineTool({
        name: 'create_ticket',
        input: z.object({ id: z.string() }),
        effect: 'resumable',
        destructive: false,
        async execute(args, ctx) {
          try {
            await ctx.step('create', async () => {
              steps.push('create');
              if (ctx.attempt === 1) {
                await redis.handle().pause(); // Redis freezes as the step's record is sent
                frozen = true;
              }
              return 'created';
            });
          } catch (error) {
            throw new Error(`could not create ticket ${args.id}`, { cause: error }); // wrapped, as tools do
          }
          return `ticket ${args.id}`;
        },
      });
      const connection = new Redis(redis.handle().url, { commandTimeout: 300, maxRetriesPerRequest: 1 });
      const processor = withToolReceipts({
        redis: connection,
        prefix: redis.handle().prefix,
        tools: [tool],
        logger: pino({ level: 'silent' }),
      });
      const data = { tenantId: 'acme', runId: 'run-step-timeout', calls: [{ id: 'toolu_1', name: 'create_ticket', input: { id: 'T-9' } }] };

      const error = await processor(testJob(data, { attempts: 3 }).job, 'token').catch((e: unknown) => e);
      await redis.handle().resume();
      frozen = false;
      expect(error).toBeInstanceOf(RedisTimeoutError);
      expect(error).toMatchObject({ code: 'redis.timeout', step: 'recordStep', tool: 'create_ticket' });
      expect(await connection.hgetall(processor.breaker.redisKey('acme', 'run-step-timeout'))).toEqual({});

      // The next delivery takes the call over from the step the primary kept: the step does not run again.
      const retry = await processor(testJob(data, { attemptsMade: 1, attempts: 3 }).job, 'token');
      expect(retry.results).toEqual([expect.objectContaining({ outcome: 'executed', content: 'ticket T-9' })]);
      expect(steps).toEqual(['create']);
      const key = {
        tenantId: 'acme',
        runId: 'run-step-timeout',
        toolName: 'create_ticket',
        argsHash: await toolCallArgsHash({ id: 'T-9' }),
      };
      expect(await processor.store.inspect(key)).toMatchObject({ status: 'completed', attempts: 2 });
      await connection.quit();
    },
  );

  it('durability the server cannot give (aof without WAITAOF) fails the job unrecoverably on its first attempt', async (ctx) => {
    const l = await lane();
    if (await hasWaitAof(l.redis)) ctx.skip('this redis-server has WAITAOF (7.2+)');
    let runs = 0;
    const tool = defineTool({
      name: 'send_email',
      input: z.object({ to: z.string() }),
      effect: 'opaque',
      destructive: false,
      execute: () => `sent ${++runs}`,
    });
    l.worker({ tools: [tool], durability: { replicas: 0, aof: true } });
    const job = await l.run(jobData([call('send_email', { to: 'ada@example.com' })]), RETRYING);
    expect(job.failedReason).toMatch(/^durability\.unsupported: /);
    expect(job.attemptsMade).toBe(1);
    expect(runs).toBe(0);
  });
});
