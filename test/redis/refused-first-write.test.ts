/**
 * A creating claim and a complete read no TYPE of the run index or the
 * counting set: the first write to each refuses a wrong type. These tests hold
 * them to the promise a TYPE read gave: refused, and nothing written.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { receiptCountRedisKey } from '../../src/redis/keys.js';
import type { ReceiptStore } from '../../src/redis/receipts/store.js';
import { useRedis } from '../support/redis-fixture.js';

const fixture = useRedis();

const freshPrefix = () => `${fixture.handle().prefix}w${randomBytes(3).toString('hex')}`;
const call = (runId: string, argsHash: string) => ({ tenantId: 'acme', runId, toolName: 'send_email', argsHash });

/** Everything a refused transition could have touched: the receipt hash, the run index, their expiries (to the second). */
async function snapshot(redis: Redis, store: ReceiptStore, key: ReturnType<typeof call>) {
  const index = store.runIndexKey(key.tenantId, key.runId);
  return {
    receipt: await redis.hgetall(store.redisKey(key)),
    receiptTtl: Math.round((await redis.pttl(store.redisKey(key))) / 1000),
    index: await redis.zrange(index, 0, -1, 'WITHSCORES'),
    indexTtl: Math.round((await redis.pttl(index)) / 1000),
  };
}

describe('a counting set of the wrong type', () => {
  it('refuses a creating claim and leaves the run index as it was, an earlier lifetime entry and its score included', async () => {
    const store = fixture.store({ prefix: freshPrefix() });
    const redis = fixture.connect();
    const key = call('r1', 'a');
    const index = store.runIndexKey(key.tenantId, key.runId);
    await redis.zadd(index, 1234, store.redisKey(key), 99, 'other');
    await redis.set(receiptCountRedisKey(store.prefix, 'acme', 'r1'), 'not a set');
    const before = await snapshot(redis, store, key);
    await expect(store.claim(key, { effect: 'opaque' })).rejects.toMatchObject({
      code: 'receipt.corrupt',
      redisKey: receiptCountRedisKey(store.prefix, 'acme', 'r1'),
    });
    expect(await snapshot(redis, store, key)).toEqual(before);
    expect(await redis.get(receiptCountRedisKey(store.prefix, 'acme', 'r1'))).toBe('not a set');
  });

  it('refuses a creating claim on a run without an index and leaves it without one', async () => {
    const store = fixture.store({ prefix: freshPrefix() });
    const redis = fixture.connect();
    const key = call('r2', 'a');
    await redis.set(receiptCountRedisKey(store.prefix, 'acme', 'r2'), 'not a set');
    await expect(store.claim(key, { effect: 'resumable' })).rejects.toMatchObject({ code: 'receipt.corrupt' });
    expect(await redis.exists(store.runIndexKey(key.tenantId, key.runId), store.redisKey(key))).toBe(0);
  });

  it('refuses a complete, in its fence or out of it, and the receipt keeps every field and its expiry', async () => {
    const store = fixture.store({ prefix: freshPrefix() });
    const redis = fixture.connect();
    const key = call('r3', 'a');
    const { fence } = await store.claim(key, { effect: 'opaque' });
    const countKey = receiptCountRedisKey(store.prefix, 'acme', 'r3');
    await redis.del(countKey);
    await redis.set(countKey, 'not a set');
    const before = await snapshot(redis, store, key);
    await expect(store.complete(key, fence!, 'done')).rejects.toMatchObject({ code: 'receipt.corrupt', redisKey: countKey });
    await expect(store.complete(key, { ...fence!, epoch: 'another' }, 'done')).rejects.toMatchObject({
      code: 'receipt.corrupt',
      redisKey: countKey,
    });
    expect(await snapshot(redis, store, key)).toEqual(before);
    expect(before.receipt['status']).toBe('running');
  });
});

describe('a run index of the wrong type', () => {
  it('refuses a creating claim before the counting set is written', async () => {
    const store = fixture.store({ prefix: freshPrefix() });
    const redis = fixture.connect();
    const key = call('r4', 'a');
    const index = store.runIndexKey(key.tenantId, key.runId);
    await redis.rpush(index, 'x');
    await expect(store.claim(key, { effect: 'opaque' })).rejects.toMatchObject({ code: 'receipt.corrupt', redisKey: index });
    expect(await redis.exists(store.redisKey(key), receiptCountRedisKey(store.prefix, 'acme', 'r4'))).toBe(0);
  });
});
