/**
 * What the README promises for a receipts connection with ioredis'
 * `commandTimeout`: a frozen Redis fails the call with ioredis' timeout
 * instead of hanging it, the tool does not run, and because the claim may
 * still land once Redis answers again, the next delivery waits on it rather
 * than running the tool beside it.
 */
import { DelayedError } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, withToolReceipts } from '../../src/bullmq/index.js';
import { toolCallArgsHash } from '../../src/core/index.js';
import { testJob } from '../../src/testing/index.js';
import { faultTestsSupported } from '../support/redis.js';
import { useRedis, waitUntil } from '../support/redis-fixture.js';

const redis = useRedis();
const faults = faultTestsSupported();
let frozen = false;

afterEach(async () => {
  if (frozen) await redis.handle().resume();
  frozen = false;
});

describe('a receipts connection with commandTimeout', () => {
  it.skipIf(!faults)('fails the job with the timeout when Redis freezes at the claim, and the next delivery waits on the late claim', async () => {
    const ran: string[] = [];
    const tool = defineTool({
      name: 'send_email',
      input: z.object({ to: z.email() }),
      effect: 'opaque',
      execute: (args) => void ran.push(args.to),
    });
    const connection = new Redis(redis.handle().url, { commandTimeout: 300, maxRetriesPerRequest: 1 });
    const processor = withToolReceipts({ redis: connection, prefix: redis.handle().prefix, tools: [tool], logger: pino({ level: 'silent' }) });
    const input = { to: 'ada@example.com' };
    const data = { tenantId: 'acme', runId: 'run-frozen', calls: [{ id: 'toolu_1', name: 'send_email', input }] };
    await connection.ping(); // scripts and connection ready before the freeze

    await redis.handle().pause();
    frozen = true;
    await expect(processor(testJob(data).job, 'token')).rejects.toThrow(/Command timed out/);
    await redis.handle().resume();
    frozen = false;

    expect(ran).toEqual([]);
    const key = { tenantId: 'acme', runId: 'run-frozen', toolName: 'send_email', argsHash: await toolCallArgsHash(input) };
    // The claim was sent before the freeze and runs when Redis wakes: its receipt is running with a live lease.
    const record = await waitUntil(() => processor.store.inspect(key), (r) => r !== null, 5_000, 'the late claim to land');
    expect(record).toMatchObject({ status: 'running', attempts: 1, leaseExpired: false });

    const retry = testJob(data, { attemptsMade: 1, attempts: 3 });
    await expect(processor(retry.job, 'token')).rejects.toBeInstanceOf(DelayedError);
    expect(retry.record.delayedUntil).toHaveLength(1);
    expect(ran).toEqual([]);
    await connection.quit();
  });
});
