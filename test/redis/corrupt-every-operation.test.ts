/**
 * "Every operation on a corrupt receipt throws CorruptReceiptError and writes
 * nothing": each store method that reaches a receipt, on a hash without its
 * `status` and on a key of another Redis type.
 */
import { describe, expect, it } from 'vitest';
import type { ReceiptStore } from '../../src/redis/receipts/store.js';
import { ReconcileStore } from '../../src/redis/receipts/transitions/reconcile-store.js';
import { freshKey, useRedis } from '../support/redis-fixture.js';
import { receiptOperations } from '../support/store-operations.js';

const fixture = useRedis();
const fence = { attempt: 1, epoch: 'e' };
const reconciles = (store: ReceiptStore): ReconcileStore => new ReconcileStore({ redis: fixture.connect(), prefix: store.prefix });

const operations = receiptOperations(fence, reconciles);

describe.each(operations)('%s on a corrupt receipt', (_name, operation) => {
  it('a hash without status: receipt.corrupt, nothing written', async () => {
    const store = fixture.store();
    const redis = fixture.connect();
    const key = freshKey();
    await redis.hset(store.redisKey(key), 'attempts', '1', 'epoch', 'e', 'effect', 'opaque', 'result', '"old"');
    const before = await redis.hgetall(store.redisKey(key));
    await expect(operation(store, key)).rejects.toMatchObject({ code: 'receipt.corrupt', redisKey: store.redisKey(key) });
    expect(await redis.hgetall(store.redisKey(key))).toEqual(before);
    expect(await redis.exists(store.runIndexKey(key.tenantId, key.runId))).toBe(0);
  });

  it('a key of another type: receipt.corrupt, nothing written', async () => {
    const store = fixture.store();
    const redis = fixture.connect();
    const key = freshKey();
    await redis.set(store.redisKey(key), 'not a hash');
    await expect(operation(store, key)).rejects.toMatchObject({ code: 'receipt.corrupt', redisKey: store.redisKey(key) });
    expect(await redis.get(store.redisKey(key))).toBe('not a hash');
  });
});
