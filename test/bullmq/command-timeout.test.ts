/**
 * What the README promises for a receipts connection with ioredis'
 * `commandTimeout`: a frozen Redis fails the call with a typed
 * `redis.timeout` naming the receipt, the tool and the step instead of
 * hanging it, the tool does not run, and because the claim may still land
 * once Redis answers again, the worker releases the attempt that claim
 * started (failed `neverStarted`) as soon as Redis answers: the next
 * delivery runs the call once, and nothing is left ambiguous.
 */
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, withToolReceipts } from '../../src/bullmq/index.js';
import { toolCallArgsHash } from '../../src/core/index.js';
import { RedisTimeoutError } from '../../src/redis/index.js';
import { testJob } from '../../src/testing/index.js';
import { faultTestsSupported } from '../support/redis.js';
import { useRedis } from '../support/redis-fixture.js';

const redis = useRedis();
const faults = faultTestsSupported();
let frozen = false;

afterEach(async () => {
  if (frozen) await redis.handle().resume();
  frozen = false;
});

describe('a receipts connection with commandTimeout', () => {
  it.skipIf(!faults)(
    'fails the job with redis.timeout when Redis freezes at the claim, releases the late claim, and the next delivery runs the call once',
    async () => {
      const ran: string[] = [];
      const tool = defineTool({
        name: 'send_email',
        input: z.object({ to: z.email() }),
        effect: 'opaque',
        execute: (args) => void ran.push(args.to),
      });
      const connection = new Redis(redis.handle().url, { commandTimeout: 300, maxRetriesPerRequest: 1 });
      const lines: Array<Record<string, unknown>> = [];
      const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
      const processor = withToolReceipts({ redis: connection, prefix: redis.handle().prefix, tools: [tool], logger });
      const input = { to: 'ada@example.com' };
      const data = { tenantId: 'acme', runId: 'run-frozen', calls: [{ id: 'toolu_1', name: 'send_email', input }] };
      await connection.ping(); // scripts and connection ready before the freeze

      await redis.handle().pause();
      frozen = true;
      const first = processor(testJob(data).job, 'token').then(
        () => undefined,
        (error: unknown) => error,
      );
      // Frozen well past the claim's timeout; the worker keeps trying to release what its claim may have done.
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      await redis.handle().resume();
      frozen = false;

      const error = await first;
      expect(error).toBeInstanceOf(RedisTimeoutError);
      const timeout = error as RedisTimeoutError;
      const key = { tenantId: 'acme', runId: 'run-frozen', toolName: 'send_email', argsHash: await toolCallArgsHash(input) };
      expect(timeout).toMatchObject({ code: 'redis.timeout', step: 'claim', tool: 'send_email', redisKey: processor.store.redisKey(key) });
      expect(timeout.message).toContain(processor.store.redisKey(key));
      // The claim ran when Redis woke, and the release after it: the attempt is settled as never started.
      expect(timeout.releases).toEqual([{ redisKey: processor.store.redisKey(key), attempt: 1, outcome: 'released' }]);
      expect(ran).toEqual([]);
      // Logged as a warning that names what was cut off and what became of it.
      expect(lines).toContainEqual(
        expect.objectContaining({
          level: 40,
          code: 'redis.timeout',
          receiptKey: processor.store.redisKey(key),
          tool: 'send_email',
          step: 'claim',
          releases: [expect.objectContaining({ outcome: 'released' })],
        }),
      );
      expect(await processor.store.inspect(key)).toMatchObject({ status: 'failed', attempts: 1, tier: 'neverStarted' });
      expect(await processor.store.listAmbiguous()).toEqual([]);

      const retry = testJob(data, { attemptsMade: 1, attempts: 3 });
      await expect(processor(retry.job, 'token')).resolves.toMatchObject({ results: [{ outcome: 'executed' }] });
      expect(ran).toEqual(['ada@example.com']);
      expect(await processor.store.inspect(key)).toMatchObject({ status: 'completed', attempts: 2 });
      await connection.quit();
    },
  );
});
