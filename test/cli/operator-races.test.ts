/**
 * Operator actions racing other writers on a real Redis and real BullMQ: a
 * resolve refused because another operator's landed first names that
 * operator's verdict; a resolve with its job retry, when the call is claimed
 * again right after the resolve, reports the resolve and leaves the jobs;
 * retries of one failed job at once retry it once and report the others.
 */
import { randomBytes } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { ToolCallReceiptKey } from '../../src/core/identity.js';
import { retryFailedJobs } from '../../src/bullmq/index.js';
import { resolveReceipt } from '../../src/operator/resolve.js';
import { receiptRedisKey } from '../../src/redis/keys.js';
import { ReceiptStore, type Resolution } from '../../src/redis/receipts/store.js';
import { freshKey, useRedis, waitUntil } from '../support/redis-fixture.js';
import { makeAmbiguous } from './support.js';

const fixture = useRedis();

/** A store whose resolve lets another writer act just before or just after its own write, as a race would. */
class InterleavedStore extends ReceiptStore {
  before: () => Promise<unknown> = async () => undefined;
  after: () => Promise<unknown> = async () => undefined;
  override async resolve(key: ToolCallReceiptKey, resolution: Resolution): Promise<void> {
    await this.before();
    await super.resolve(key, resolution);
    await this.after();
  }
}

const interleaved = () => new InterleavedStore({ prefix: fixture.handle().prefix, redis: fixture.client() });

describe('operator actions racing other writers', () => {
  it("a resolve refused because another operator's verdict landed first names that verdict, not the state it read", async () => {
    const other = fixture.store();
    const key = freshKey();
    const attempt = await makeAmbiguous(other, key);
    const redisKey = receiptRedisKey(fixture.handle().prefix, key);
    const { epoch } = (await other.inspect(key))!;
    const store = interleaved();
    // Bob read the receipt; alice's verdict lands before his write.
    store.before = () =>
      resolveReceipt(other, redisKey, { attemptsSeen: attempt, epochSeen: epoch, outcome: 'completed', result: 'sent', by: 'alice' });
    const refused = await resolveReceipt(store, redisKey, {
      attemptsSeen: attempt,
      epochSeen: epoch,
      outcome: 'failed',
      error: 'not sent',
      by: 'bob',
    }).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'cli.resolve_refused', reason: 'settled' });
    expect((refused as Error).message).toMatch(/attempt 1 is already completed: an operator resolved it completed by alice/);
    expect((await other.inspect(key))!.history.map((entry) => `${entry.what} ${entry.by}`)).toEqual(['resolve.completed alice']);
  });

  it('a resolve with its job retry, the call claimed again right after it, reports the resolve and retries nothing', async () => {
    const other = fixture.store();
    const key = freshKey();
    const attempt = await makeAmbiguous(other, key);
    const redisKey = receiptRedisKey(fixture.handle().prefix, key);
    const store = interleaved();
    store.after = () => other.claim(key, { effect: 'opaque' });
    const resolved = await resolveReceipt(
      store,
      redisKey,
      { attemptsSeen: attempt, outcome: 'failed', error: 'not sent', by: 'ops' },
      { retryJobsOn: fixture.connect() },
    );
    expect(resolved.after).toMatchObject({ status: 'running', attempts: attempt + 1 });
    expect(resolved.jobs).toBeUndefined();
    expect(resolved.jobsNotRetried).toMatch(/^attempt 2 of the call started right after the resolve, so its jobs were not retried/);
    expect(resolved.after!.history.map((entry) => entry.what)).toEqual(['resolve.failed']);
  });

  it('retries of one failed job at once retry it once and report the state the others found it in', async () => {
    // BullMQ's blocking worker needs connections that retry forever.
    const opened: Redis[] = [];
    const connect = () => opened[opened.push(new Redis(fixture.handle().url, { maxRetriesPerRequest: null })) - 1]!;
    const connection = connect();
    const prefix = `${fixture.handle().prefix}:bull`;
    const queueName = `retry-${randomBytes(3).toString('hex')}`;
    const queue = new Queue(queueName, { connection, prefix });
    const worker = new Worker(
      queueName,
      async () => {
        throw new Error('boom');
      },
      { connection: connect(), prefix },
    );
    try {
      const job = await queue.add('turn', {});
      await waitUntil(
        () => job.getState(),
        (state) => state === 'failed',
        10_000,
        'the job to fail',
      );
      await worker.close();
      const store = fixture.store();
      const key = freshKey();
      const claimed = await store.claim(key, { effect: 'opaque', job: { queue: queueName, prefix, id: job.id! } });
      await store.fail(key, claimed.fence!, { error: 'the provider said no', tier: 'neutral' });
      const record = (await store.inspect(key))!;

      // Two consoles (or a double click) retry at once: each read the job failed before either retried it.
      const reports = await Promise.all(Array.from({ length: 4 }, () => retryFailedJobs(connection, record)));
      const actions = reports.map(([report]) => report!.action);
      expect(actions.filter((action) => action === 'retried')).toHaveLength(1);
      for (const action of actions.filter((a) => a !== 'retried')) expect(['waiting', 'active', 'prioritized']).toContain(action);
      expect(await job.getState()).toBe('waiting');
    } finally {
      await worker.close();
      await queue.close();
      for (const each of opened) each.disconnect();
    }
  });
});
