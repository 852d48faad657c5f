/**
 * "Every operation on a corrupt receipt throws CorruptReceiptError and writes
 * nothing": each store method that reaches a receipt, on a hash without its
 * `status` and on a key of another Redis type.
 */
import { describe, expect, it } from 'vitest';
import type { ToolCallReceiptKey } from '../../src/core/identity.js';
import type { ReceiptStore } from '../../src/redis/receipt-store.js';
import { ReconcileStore } from '../../src/redis/reconcile-store.js';
import { freshKey, useRedis } from '../support/redis-fixture.js';

const fixture = useRedis();
const fence = { attempt: 1, epoch: 'e' };
const reconciles = (store: ReceiptStore): ReconcileStore => new ReconcileStore({ redis: fixture.connect(), prefix: store.prefix });

const operations: [string, (store: ReceiptStore, key: ToolCallReceiptKey) => Promise<unknown>][] = [
  ['claim', (s, k) => s.claim(k, { effect: 'opaque' })],
  ['complete', (s, k) => s.complete(k, fence, 'x')],
  ['completeAndClaim', (s, k) => s.completeAndClaim(k, fence, 'x', { key: { ...k, argsHash: `${k.argsHash}-next` }, options: { effect: 'opaque' } })],
  ['claimGroup', async (s, k) => {
    // A corrupt receipt is left to its own claim: the group answers null for it, and the claim says why.
    const [ahead] = await s.claimGroup([{ key: k, options: { effect: 'opaque' } }]);
    if (ahead !== null) throw new Error('expected no answer for a corrupt receipt');
    return s.claim(k, { effect: 'opaque' });
  }],
  ['fail', (s, k) => s.fail(k, fence, { error: 'x' })],
  ['markOutcomeUnknown', (s, k) => s.markOutcomeUnknown(k, fence, 'x')],
  ['heartbeat', (s, k) => s.heartbeat(k, fence)],
  ['recordStep', (s, k) => s.recordStep(k, fence, 'step', 1)],
  ['flagAmbiguous', (s, k) => s.flagAmbiguous(k, fence, 'opaque')],
  ['resolve', (s, k) => s.resolve(k, { attemptsSeen: 1, outcome: 'failed', error: 'x' })],
  ['inspect', (s, k) => s.inspect(k)],
  ['ReconcileStore.begin', (s, k) => reconciles(s).begin(k, fence, 1_000, 'w')],
  ['ReconcileStore.settle', (s, k) => reconciles(s).settle(k, { ...fence, reconciles: 1, worker: 'w' }, { verdict: 'unknown', note: 'n' })],
  ['ReconcileStore.noteJob', (s, k) => reconciles(s).noteJob(k, { queue: 'q', prefix: 'bull', id: '1' })],
  ['ReconcileStore.reclaimKeyed', (s, k) => reconciles(s).reclaimKeyed(k, { lost: fence, keyWindowMs: 60_000, leaseMs: 1_000, owner: 'w' })],
];

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
