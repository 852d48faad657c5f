/**
 * Every transition sets a TTL: running receipts outlive their lease, settled
 * ones expire retentionMs after settling, ambiguous ones are kept.
 */
import { describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { freshKey, useRedis, waitForLeaseExpiry, waitUntil } from '../support/redis-fixture.js';

const fixture = useRedis();

/** PTTL of two keys read at one instant (in one MULTI). */
async function pttls(redis: Redis, a: string, b: string): Promise<[number, number]> {
  const replies = (await redis.multi().pttl(a).pttl(b).exec()) ?? [];
  return [Number(replies[0]?.[1]), Number(replies[1]?.[1])];
}

describe('retention', () => {
  it('a running receipt lives lease + retention; the run index at least as long', async () => {
    const store = fixture.store({ retentionMs: 50_000 });
    const redis = fixture.connect();
    const key = freshKey();
    await store.claim(key, { effect: 'opaque', leaseMs: 20_000 });
    // The index is read first: both TTLs only shrink, so the later read of the receipt can never exceed it.
    const [indexPttl, pttl] = await pttls(redis, store.runIndexKey(key.tenantId, key.runId), store.redisKey(key));
    expect(pttl).toBeGreaterThan(60_000);
    expect(pttl).toBeLessThanOrEqual(70_000);
    expect(indexPttl).toBeGreaterThanOrEqual(pttl);
  });

  it('never expires while its lease is live, even with a retention far shorter than the lease', async () => {
    const store = fixture.store({ retentionMs: 100 });
    const redis = fixture.connect();
    const key = freshKey();
    const { leaseUntilMs } = await store.claim(key, { effect: 'resumable', leaseMs: 600 });
    // Poll until the server says the lease is over. Whenever the receipt is
    // missing, the server clock must already be past the lease end.
    await waitUntil(
      async () => {
        const record = await store.inspect(key);
        if (record) return record.leaseExpired;
        const [seconds, micros] = await redis.time();
        expect(Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)).toBeGreaterThanOrEqual(leaseUntilMs!);
        return true;
      },
      (expired) => expired,
      10_000,
      'lease expiry',
    );
    // After lease + retention it is gone, and the same call executes afresh.
    await waitUntil(
      () => store.inspect(key),
      (r) => r === null,
      10_000,
      'expiry',
    );
    expect((await store.claim(key, { effect: 'resumable' })).decision).toEqual({ kind: 'execute', attempt: 1 });
  });

  it('a heartbeat extends the TTL with the lease, and never shortens it', async () => {
    const store = fixture.store({ retentionMs: 10_000 });
    const redis = fixture.connect();
    const key = freshKey();
    const fence = (await store.claim(key, { effect: 'resumable', leaseMs: 1_000 })).fence!;
    await store.heartbeat(key, fence, 100_000);
    expect(await redis.pttl(store.redisKey(key))).toBeGreaterThan(100_000);
    await store.heartbeat(key, fence, 1_000);
    expect(await redis.pttl(store.redisKey(key))).toBeGreaterThan(100_000);
    expect(await redis.pttl(store.runIndexKey(key.tenantId, key.runId))).toBeGreaterThan(100_000);
  });

  it.each(['complete', 'fail'] as const)(
    'after %s the receipt expires retentionMs later; a late retry then executes again',
    async (how) => {
      const store = fixture.store({ retentionMs: 300 });
      const longer = fixture.store({ retentionMs: 60_000 });
      const redis = fixture.connect();
      const key = freshKey();
      const fence = (await longer.claim(key, { effect: 'opaque', leaseMs: 60_000 })).fence!;
      if (how === 'complete') await store.complete(key, fence, 'r');
      else await store.fail(key, fence, { error: 'e' });
      const pttl = await redis.pttl(store.redisKey(key));
      expect(pttl).toBeGreaterThan(0);
      expect(pttl).toBeLessThanOrEqual(300);
      await waitUntil(
        () => store.inspect(key),
        (r) => r === null,
        10_000,
        'settled receipt to expire',
      );
      // Forgotten: a very late retry is indistinguishable from a first call.
      expect((await store.claim(key, { effect: 'opaque' })).decision).toEqual({ kind: 'execute', attempt: 1 });
    },
  );

  it('an ambiguous receipt is kept at least retentionMs after each claim that finds it so', async () => {
    const store = fixture.store({ retentionMs: 5_000 });
    const redis = fixture.connect();
    const key = freshKey();
    await store.claim(key, { effect: 'opaque', leaseMs: 150 });
    await waitForLeaseExpiry(store, key);
    const before = await redis.pttl(store.redisKey(key));
    expect(before).toBeLessThanOrEqual(5_000);
    const sentAt = performance.now();
    expect((await store.claim(key, { effect: 'opaque' })).decision.kind).toBe('ambiguous');
    const [indexAfter, after] = await pttls(redis, store.runIndexKey(key.tenantId, key.runId), store.redisKey(key));
    // The claim ran after sentAt and the PTTL was read before now, so the full
    // retention, less the time in between, must remain (1 ms for rounding).
    const between = performance.now() - sentAt;
    expect(after).toBeGreaterThan(4_000);
    expect(after).toBeGreaterThanOrEqual(5_000 - Math.ceil(between) - 1);
    expect(indexAfter).toBeGreaterThanOrEqual(after);
  });

  it('a resolved receipt expires retentionMs after the resolution', async () => {
    const store = fixture.store({ retentionMs: 20_000 });
    const redis = fixture.connect();
    const key = freshKey();
    await store.claim(key, { effect: 'opaque', leaseMs: 150 });
    await waitForLeaseExpiry(store, key);
    await store.resolve(key, { attemptsSeen: 1, outcome: 'completed', result: 1 });
    const pttl = await redis.pttl(store.redisKey(key));
    expect(pttl).toBeGreaterThan(15_000);
    expect(pttl).toBeLessThanOrEqual(20_000);
  });
});
