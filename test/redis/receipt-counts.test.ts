/**
 * The counting sets and the run registry behind `stats()`: counts that follow
 * expiry and lease lapses without a write, registration before the first
 * receipt, pruning that never drops a live run, and the rebuild for receipts
 * an older version wrote.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CorruptReceiptError } from '../../src/redis/errors.js';
import { receiptCountRedisKey } from '../../src/redis/keys.js';
import type { ReceiptStore } from '../../src/redis/receipts/store.js';
import { REGISTRATION_GRACE_MS, RUN_REGISTRY_SHARDS, runRegistryRedisKey, runRegistryShardKey } from '../../src/redis/runs/registry.js';
import { useRedis, waitUntil } from '../support/redis-fixture.js';

const fixture = useRedis();

const freshPrefix = () => `${fixture.handle().prefix}c${randomBytes(3).toString('hex')}`;
const call = (runId: string, argsHash: string, tenantId = 'acme') => ({ tenantId, runId, toolName: 'send_email', argsHash });
const pairs = async (store: ReceiptStore, tenantId?: string) =>
  Object.fromEntries(
    (await store.stats(tenantId === undefined ? {} : { tenantId })).byStatusAndEffect.map((c) => [`${c.status}/${c.effect}`, c.count]),
  );

describe('counting sets', () => {
  it('turn an opaque attempt ambiguous when its lease lapses, with no write in between', async () => {
    const store = fixture.store({ prefix: freshPrefix() });
    const redis = fixture.connect();
    const key = call('r1', 'a');
    await store.claim(key, { effect: 'opaque', leaseMs: 2_000 });
    const countKey = receiptCountRedisKey(store.prefix, 'acme', 'r1');
    const written = await redis.zrange(countKey, 0, -1, 'WITHSCORES');

    const live = await store.stats();
    expect(live).toMatchObject({ total: 1, runs: 1, ambiguous: 0, oldestAmbiguousSinceMs: null, byStatus: { running: 1 } });
    const record = await waitUntil(
      () => store.inspect(key),
      (r) => r?.leaseExpired === true,
    );
    const lapsed = await store.stats();
    expect(lapsed).toMatchObject({ total: 1, ambiguous: 1, oldestAmbiguousSinceMs: record!.leaseUntilMs });
    expect(await redis.zrange(countKey, 0, -1, 'WITHSCORES')).toEqual(written);

    // A resumable attempt whose lease lapsed is not ambiguous: the next claim takes it over.
    await store.claim(call('r1', 'b'), { effect: 'resumable', leaseMs: 60 });
    await waitUntil(
      () => store.inspect(call('r1', 'b')),
      (r) => r?.leaseExpired === true,
    );
    expect(await store.stats()).toMatchObject({ total: 2, ambiguous: 1 });
  });

  it('stop counting a receipt when it expires, and the set itself outlives none of them', async () => {
    const store = fixture.store({ prefix: freshPrefix(), retentionMs: 300 });
    const lasting = fixture.store({ prefix: store.prefix });
    const redis = fixture.connect();
    const brief = call('r1', 'brief');
    const { fence } = await store.claim(brief, { effect: 'opaque' });
    await store.complete(brief, fence!, 'ok');
    const kept = await lasting.claim(call('r1', 'kept'), { effect: 'resumable' });
    await lasting.fail(call('r1', 'kept'), kept.fence!, { error: 'no', tier: 'neutral' });
    expect(await pairs(store)).toEqual({ 'completed/opaque': 1, 'failed/resumable': 1 });

    await waitUntil(
      () => store.inspect(brief),
      (r) => r === null,
    );
    expect(await pairs(store)).toEqual({ 'failed/resumable': 1 });
    const countKey = receiptCountRedisKey(store.prefix, 'acme', 'r1');
    expect(await redis.pttl(countKey)).toBeGreaterThanOrEqual(await redis.pttl(lasting.redisKey(call('r1', 'kept'))));
  });

  it('refuse a counting set of the wrong type before writing anything', async () => {
    const store = fixture.store({ prefix: freshPrefix() });
    const redis = fixture.connect();
    await redis.set(receiptCountRedisKey(store.prefix, 'acme', 'r1'), 'not a set');
    const error = await store.claim(call('r1', 'a'), { effect: 'opaque' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorruptReceiptError);
    expect(await redis.exists(store.redisKey(call('r1', 'a')))).toBe(0);
    // The run was registered before the claim was refused: stats names the key instead of counting around it.
    const refused = await store.stats().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(CorruptReceiptError);
    expect((refused as Error).message).toContain(receiptCountRedisKey(store.prefix, 'acme', 'r1'));
  });

  it('count a receipt whose effect field is missing with the transactional ones (its band), and the scan under an empty effect', async () => {
    const store = fixture.store({ prefix: freshPrefix() });
    const redis = fixture.connect();
    for (const argsHash of ['a', 'b']) {
      const { fence } = await store.claim(call('r1', argsHash), { effect: 'opaque' });
      await store.complete(call('r1', argsHash), fence!, 'ok');
    }
    await redis.hdel(store.redisKey(call('r1', 'b')), 'effect');
    await store.rebuildCounts();
    const counted = await store.stats();
    expect(counted.byStatusAndEffect).toEqual([
      { status: 'completed', effect: 'opaque', count: 1 },
      { status: 'completed', effect: 'transactional', count: 1 },
    ]);
    expect((await store.stats({ scan: true })).byStatusAndEffect).toEqual([
      { status: 'completed', effect: '', count: 1 },
      { status: 'completed', effect: 'opaque', count: 1 },
    ]);
  });
});

describe('the run registry', () => {
  it('names a run before its first receipt exists, in the shard of its tenant', async () => {
    const store = fixture.store({ prefix: freshPrefix() });
    const redis = fixture.connect();
    const serverMs = async () => {
      const [s, us] = await redis.time();
      return Number(s) * 1000 + Math.floor(Number(us) / 1000);
    };
    const before = await serverMs();
    await store.claim(call('run {1}', 'a', 'acme eu'), { effect: 'opaque' });
    const after = await serverMs();
    const shard = runRegistryShardKey(store.prefix, 'acme eu');
    expect(await redis.zrange(shard, 0, -1)).toEqual(['acme%20eu|run%20%7B1%7D']);
    // Scored by the server's clock, whatever this process's clock says.
    const score = Number(await redis.zscore(shard, 'acme%20eu|run%20%7B1%7D'));
    expect(score).toBeGreaterThanOrEqual(before);
    expect(score).toBeLessThanOrEqual(after);
    const all = await Promise.all(Array.from({ length: RUN_REGISTRY_SHARDS }, (_, n) => redis.zcard(runRegistryRedisKey(store.prefix, n))));
    expect(all.reduce((a, b) => a + b, 0)).toBe(1);
  });

  it('drops a run whose counting set is gone only after the grace, and never one still counted', async () => {
    const store = fixture.store({ prefix: freshPrefix() });
    const redis = fixture.connect();
    await store.claim(call('live', 'a'), { effect: 'opaque' });
    const shard = runRegistryShardKey(store.prefix, 'acme');
    const old = Date.now() - REGISTRATION_GRACE_MS - 60_000;
    await redis.zadd(shard, old, 'acme|live', old, 'acme|dead', Date.now() - 1_000, 'acme|fresh');

    const stats = await store.stats();
    expect(stats).toMatchObject({ total: 1, runs: 1 });
    expect((await redis.zrange(shard, 0, -1)).sort()).toEqual(['acme|fresh', 'acme|live']);
  });

  it('keeps counting receipts a store writes after its entry was pruned', async () => {
    const store = fixture.store({ prefix: freshPrefix(), retentionMs: 200 });
    const redis = fixture.connect();
    const shard = runRegistryShardKey(store.prefix, 'acme');
    const { fence } = await store.claim(call('r', 'a'), { effect: 'opaque', leaseMs: 100 });
    await store.complete(call('r', 'a'), fence!, 'ok');
    await waitUntil(
      () => redis.exists(receiptCountRedisKey(store.prefix, 'acme', 'r')),
      (n) => n === 0,
    );
    // Pretend the registration is old: stats prunes it.
    await redis.zadd(shard, Date.now() - REGISTRATION_GRACE_MS - 60_000, 'acme|r');
    await store.stats();
    expect(await redis.zcard(shard)).toBe(0);
    // A new store (another process) registers the run again before its claim.
    const later = fixture.store({ prefix: store.prefix });
    await later.claim(call('r', 'b'), { effect: 'opaque' });
    expect(await later.stats()).toMatchObject({ total: 1, runs: 1 });
  });
});

describe('rebuildCounts', () => {
  it('counts receipts written before counting sets existed, and drops ones deleted by hand', async () => {
    const store = fixture.store({ prefix: freshPrefix() });
    const redis = fixture.connect();
    for (const [runId, tenantId] of [
      ['r1', 'acme'],
      ['r2', 'acme'],
      ['r3', 'globex'],
    ] as const) {
      for (const argsHash of ['a', 'b', 'c']) {
        const { fence } = await store.claim(call(runId, argsHash, tenantId), { effect: 'opaque' });
        if (argsHash !== 'c') await store.complete(call(runId, argsHash, tenantId), fence!, argsHash);
      }
    }
    const truth = await store.stats({ scan: true });
    expect(await store.stats()).toMatchObject({ total: 9, runs: 3 });
    // What an older version leaves: no counting sets, no registry. And one receipt deleted by hand.
    const stale = [...(await redis.keys(`${store.prefix}:cnt:*`)), ...(await redis.keys(`${store.prefix}:runs:*`))];
    await redis.del(...stale);
    // With no run registered, stats reads every receipt rather than answer 0.
    expect(await store.stats()).toMatchObject({ total: 9, runs: 3, readBy: 'scan' });

    expect(await store.rebuildCounts({ tenantId: 'acme' })).toEqual({ runs: 2, receipts: 6, corrupt: 0 });
    // Once some runs are registered, only registered runs are counted: the rest wait for their rebuild.
    expect(await store.stats()).toMatchObject({ total: 6, runs: 2, readBy: 'counting-sets' });
    await redis.del(store.redisKey(call('r3', 'a', 'globex')));
    expect(await store.rebuildCounts()).toEqual({ runs: 3, receipts: 8, corrupt: 0 });
    const rebuilt = await store.stats();
    expect(rebuilt).toMatchObject({ total: 8, runs: 3, byStatus: { running: 3, completed: 5 } });
    expect(rebuilt.byStatusAndEffect).toEqual((await store.stats({ scan: true })).byStatusAndEffect);
    expect(truth.total).toBe(9);
  });
});
