/**
 * Parking a job on the Redis server's clock works on both BullMQ majors the
 * package runs under: BullMQ 6 keeps the low-level move on `job.backend`,
 * BullMQ 5 on `job.scripts`. The target is given on a clock ten minutes away
 * from this process's, so a fall back to `Date.now()` would show.
 */
import * as bullmq6 from 'bullmq';
import * as bullmq5 from 'bullmq-v5';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PARKED_DELIVERY_UNWIND_MS, parkJobOnServerClock } from '../../src/bullmq/turn/park-job.js';
import { startRedis, type RedisHandle } from '../support/redis.js';

const TEN_MINUTES = 10 * 60_000;
const DELAY_MS = 2_000;
/** BullMQ scores a delayed job as `dueMs * 0x1000 + counter`. */
const SCORE_SHIFT = 0x1000;

let server: RedisHandle;
let redis: Redis;
beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.url);
});
afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

type Major = Pick<typeof bullmq6, 'Queue' | 'Worker' | 'DelayedError'>;

describe.each([
  ['BullMQ 6', bullmq6 as Major],
  ['BullMQ 5', bullmq5 as unknown as Major],
])('%s', (name, { Queue, Worker, DelayedError }) => {
  /** Parks one job with `delayMs` from a server clock ten minutes ahead; the time it is due at. */
  const parkedDue = async (delayMs: number, serverNowMs: number): Promise<number> => {
    const queueName = `park-${name.replace(' ', '')}-${delayMs}`;
    const connection = { url: server.url, maxRetriesPerRequest: null };
    const queue = new Queue(queueName, { connection, prefix: server.prefix });
    let parked!: (id: string) => void;
    const parkedId = new Promise<string>((resolve) => (parked = resolve));
    const worker = new Worker(
      queueName,
      async (job, token) => {
        await parkJobOnServerClock(job as unknown as bullmq6.Job, token, serverNowMs, delayMs);
        parked(job.id!);
        throw new DelayedError();
      },
      { connection, prefix: server.prefix },
    );
    try {
      const job = await queue.add('park', {});
      expect(await parkedId).toBe(job.id);
      const score = await redis.zscore(`${server.prefix}:${queueName}:delayed`, job.id!);
      expect(score).not.toBeNull();
      return Math.floor(Number(score) / SCORE_SHIFT);
    } finally {
      await worker.close();
      await queue.close();
    }
  };

  it('parks a job due at the given server time plus the delay, not on the worker clock', async () => {
    const serverNowMs = Date.now() + TEN_MINUTES;
    expect(await parkedDue(DELAY_MS, serverNowMs)).toBe(serverNowMs + DELAY_MS);
  });

  it('parks a job a quarter second at least, so its delivery has unwound before it is due', async () => {
    const serverNowMs = Date.now() + TEN_MINUTES;
    expect(PARKED_DELIVERY_UNWIND_MS).toBe(250);
    expect(await parkedDue(5, serverNowMs)).toBe(serverNowMs + PARKED_DELIVERY_UNWIND_MS);
  });
});
