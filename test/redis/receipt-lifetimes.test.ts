/**
 * Fences across a receipt's lifetimes, ambiguity that stays put, the run
 * index in order, and corrupt receipts: each against a real Redis, with
 * leases and retention short enough that expiry really happens.
 */
import { describe, expect, it } from 'vitest';
import { ContestedReceiptError, CorruptReceiptError, FencedOutError } from '../../src/redis/errors.js';
import { claimFence, freshKey, runIndexEntryOf, useRedis, waitForLeaseExpiry, waitUntil } from '../support/redis-fixture.js';

const fixture = useRedis();
const LEASE = 150;
const RETENTION = 300;

describe('a stale attempt of an expired lifetime', () => {
  it('cannot complete, fail, heartbeat or record a step on the next lifetime of the same call', async () => {
    const store = fixture.store({ leaseMs: LEASE, retentionMs: RETENTION });
    const key = freshKey();
    const stale = await claimFence(store, key, { effect: 'resumable' });
    // The worker holding `stale` stalls through lease and retention: the receipt is gone.
    await waitUntil(
      () => store.inspect(key),
      (r) => r === null,
      10_000,
      'the first lifetime to expire',
    );
    const live = await claimFence(store, key, { effect: 'resumable', leaseMs: 60_000 });
    expect(live.attempt).toBe(stale.attempt);
    expect(live.epoch).not.toBe(stale.epoch);
    const before = await store.inspect(key);
    for (const write of [
      () => store.complete(key, stale, 'stale result'),
      () => store.fail(key, stale, { error: 'stale failure' }),
      () => store.heartbeat(key, stale),
      () => store.recordStep(key, stale, 'stale', 1),
    ]) {
      const error = await write().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(FencedOutError);
      expect(error).toMatchObject({ attempt: 1, epoch: stale.epoch, observed: { status: 'running', attempts: 1, epoch: live.epoch } });
      expect((error as Error).message).toContain('later lifetime');
    }
    expect({ ...(await store.inspect(key)), readAtMs: 0, ttlMs: 0 }).toEqual({ ...before, readAtMs: 0, ttlMs: 0 });
    await store.complete(key, live, 'live result');
    expect(await store.claim(key, { effect: 'resumable' })).toMatchObject({ decision: { kind: 'replay' }, result: 'live result' });
  });
});

describe('ambiguity that stays put', () => {
  it('a resumable receipt reported ambiguous to an opaque claim is not taken over by a later resumable claim', async () => {
    const store = fixture.store({ leaseMs: LEASE });
    const key = freshKey();
    await claimFence(store, key, { effect: 'resumable' });
    await waitForLeaseExpiry(store, key);
    const verdict = await store.claim(key, { effect: 'opaque' });
    expect(verdict.decision.kind).toBe('ambiguous');
    for (let i = 0; i < 3; i++) {
      const later = await store.claim(key, { effect: 'resumable' });
      expect(later).toMatchObject({
        decision: { kind: 'ambiguous' },
        ambiguousMs: verdict.ambiguousMs,
        state: { reportedAmbiguous: true },
      });
      expect(later.fence).toBeUndefined();
    }
    expect(await store.inspect(key)).toMatchObject({ status: 'running', attempts: 1, ambiguousMs: verdict.ambiguousMs });
    expect((await store.listAmbiguous()).map((r) => r.redisKey)).toContain(store.redisKey(key));
    // The operator's pending resolve is not fenced out by a takeover: there was none.
    await store.resolve(key, { attemptsSeen: 1, outcome: 'failed', error: 'checked: nothing happened' });
    expect(await store.claim(key, { effect: 'resumable' })).toMatchObject({ decision: { kind: 'execute', attempt: 2 } });
  });

  it('a heartbeat of the original attempt after the verdict keeps it ambiguous (contested) until the attempt settles late', async () => {
    const store = fixture.store({ leaseMs: LEASE });
    const key = freshKey();
    const original = await claimFence(store, key, { effect: 'opaque' });
    await waitForLeaseExpiry(store, key);
    const verdict = await store.claim(key, { effect: 'opaque' });
    expect(verdict.decision.kind).toBe('ambiguous');

    const beat = await store.heartbeat(key, original, 60_000);
    expect(beat.contested).toBe(true);
    const contested = await store.inspect(key);
    expect(contested).toMatchObject({ status: 'running', leaseExpired: false, ambiguousMs: verdict.ambiguousMs });
    expect(contested!.lateHeartbeatMs).toEqual(expect.any(Number));
    expect((await store.listAmbiguous()).map((r) => r.redisKey)).toContain(store.redisKey(key));
    expect(await store.claim(key, { effect: 'opaque' })).toMatchObject({
      decision: { kind: 'ambiguous' },
      ambiguousMs: verdict.ambiguousMs,
    });
    const refused = await store.resolve(key, { attemptsSeen: 1, outcome: 'failed', error: 'x' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ContestedReceiptError);
    expect(refused).toMatchObject({
      code: 'receipt.contested',
      observed: { status: 'running', attempts: 1 },
      leaseUntilMs: beat.leaseUntilMs,
    });

    const settled = await store.complete(key, original, 'it landed');
    expect(settled.late).toEqual({ attempt: 1, ambiguousMs: verdict.ambiguousMs });
    expect(await store.inspect(key)).toMatchObject({
      status: 'completed',
      ambiguousMs: verdict.ambiguousMs,
      lateSettle: { atMs: settled.settledMs, attempt: 1 },
    });
    expect((await store.listAmbiguous()).map((r) => r.redisKey)).not.toContain(store.redisKey(key));
  });

  it('a late failure is recorded too, and survives the next attempt', async () => {
    const store = fixture.store({ leaseMs: LEASE });
    const key = freshKey();
    const original = await claimFence(store, key, { effect: 'opaque' });
    await waitForLeaseExpiry(store, key);
    expect((await store.claim(key, { effect: 'opaque' })).decision.kind).toBe('ambiguous');
    const settled = await store.fail(key, original, { error: 'provider said no', tier: 'neverStarted' });
    expect(settled.late).toMatchObject({ attempt: 1 });
    const next = await claimFence(store, key, { effect: 'opaque' });
    expect(next.attempt).toBe(2);
    expect(await store.inspect(key)).toMatchObject({ status: 'running', attempts: 2, ambiguousMs: null, lateSettle: { attempt: 1 } });
  });
});

describe('the run index across lifetimes', () => {
  it('lists a call claimed again after expiry by its new created_ms, oldest first, with no stale entry', async () => {
    const store = fixture.store({ leaseMs: LEASE, retentionMs: RETENTION });
    const keeper = fixture.store({ leaseMs: 60_000, retentionMs: 60_000 });
    const redis = fixture.connect();
    const base = freshKey();
    const recurring = { ...base, toolName: 'recurring' };
    const steady = { ...base, toolName: 'steady' };
    await store.complete(recurring, await claimFence(store, recurring, { effect: 'opaque' }), 'first');
    const steadyFence = await claimFence(keeper, steady, { effect: 'opaque' });
    expect((await store.listRun(base.tenantId, base.runId)).map((r) => r.key.toolName)).toEqual(['recurring', 'steady']);

    await waitUntil(
      () => store.inspect(recurring),
      (r) => r === null,
      10_000,
      'the first lifetime to expire',
    );
    await claimFence(keeper, recurring, { effect: 'opaque' });
    const index = keeper.runIndexKey(base.tenantId, base.runId);
    // The claim itself scores the entry by the new lifetime, before any listing repairs anything.
    expect(Number(await redis.zscore(index, await runIndexEntryOf(redis, keeper, recurring)))).toBe(
      (await keeper.inspect(recurring))!.createdMs,
    );
    const listed = await keeper.listRun(base.tenantId, base.runId);
    expect(listed.map((r) => r.key.toolName)).toEqual(['steady', 'recurring']);
    const scores = await redis.zrange(index, 0, -1, 'WITHSCORES');
    expect(scores).toEqual([
      await runIndexEntryOf(redis, keeper, steady),
      String(listed[0]!.createdMs),
      await runIndexEntryOf(redis, keeper, recurring),
      String(listed[1]!.createdMs),
    ]);
    await keeper.complete(steady, steadyFence, 'ok');
  });

  it('re-scores an entry an older version left at its first lifetime, and lists by created_ms meanwhile', async () => {
    const store = fixture.store();
    const redis = fixture.connect();
    const base = freshKey();
    const a = { ...base, toolName: 'a' };
    const b = { ...base, toolName: 'b' };
    await claimFence(store, a, { effect: 'opaque' });
    await claimFence(store, b, { effect: 'opaque' });
    const index = store.runIndexKey(base.tenantId, base.runId);
    const entryOfB = await runIndexEntryOf(redis, store, b);
    await redis.zadd(index, 1, entryOfB); // as ZADD NX would have kept an old lifetime's score
    expect((await store.listRun(base.tenantId, base.runId)).map((r) => r.key.toolName)).toEqual(['a', 'b']);
    expect(Number(await redis.zscore(index, entryOfB))).toBe((await store.inspect(b))!.createdMs);
  });
});

describe('corrupt receipts', () => {
  it('a receipt hash without status is a typed error for claim and inspect, and nothing is written', async () => {
    const store = fixture.store();
    const redis = fixture.connect();
    const key = freshKey();
    await store.complete(key, await claimFence(store, key, { effect: 'opaque' }), 'the old result');
    await redis.hdel(store.redisKey(key), 'status');
    const before = await redis.hgetall(store.redisKey(key));
    const error = await store.claim(key, { effect: 'opaque' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorruptReceiptError);
    expect(error).toMatchObject({ code: 'receipt.corrupt', redisKey: store.redisKey(key) });
    expect((error as Error).message).toMatch(/no status field/);
    expect(await redis.hgetall(store.redisKey(key))).toEqual(before);
    await expect(store.inspect(key)).rejects.toMatchObject({ code: 'receipt.corrupt' });
    await expect(store.listRun(key.tenantId, key.runId)).rejects.toMatchObject({ code: 'receipt.corrupt' });
  });

  it('keys of the wrong type are typed errors, never a raw WRONGTYPE, and nothing is written', async () => {
    const store = fixture.store();
    const redis = fixture.connect();
    const receiptAsString = freshKey();
    await redis.set(store.redisKey(receiptAsString), 'not a hash');
    for (const attempt of [
      () => store.claim(receiptAsString, { effect: 'opaque' }),
      () => store.inspect(receiptAsString),
      () => store.complete(receiptAsString, { attempt: 1, epoch: 'e' }, 'x'),
      () => store.resolve(receiptAsString, { attemptsSeen: 1, outcome: 'failed', error: 'x' }),
    ]) {
      await expect(attempt()).rejects.toMatchObject({ code: 'receipt.corrupt', redisKey: store.redisKey(receiptAsString) });
    }
    expect(await redis.get(store.redisKey(receiptAsString))).toBe('not a hash');

    const indexAsList = freshKey();
    const index = store.runIndexKey(indexAsList.tenantId, indexAsList.runId);
    await redis.rpush(index, 'x');
    await expect(store.claim(indexAsList, { effect: 'opaque' })).rejects.toMatchObject({ code: 'receipt.corrupt', redisKey: index });
    expect(await redis.exists(store.redisKey(indexAsList))).toBe(0);
    await expect(store.listRun(indexAsList.tenantId, indexAsList.runId)).rejects.toMatchObject({
      code: 'receipt.corrupt',
      redisKey: index,
    });
  });

  it('listAmbiguous skips a corrupt receipt, hands it to onCorrupt, and still lists the others', async () => {
    const store = fixture.store({ leaseMs: LEASE });
    const redis = fixture.connect();
    const ambiguous = freshKey();
    await claimFence(store, ambiguous, { effect: 'opaque' });
    await waitForLeaseExpiry(store, ambiguous);
    const broken = freshKey();
    await redis.hset(store.redisKey(broken), 'attempts', 1, 'effect', 'opaque');
    const corrupt: CorruptReceiptError[] = [];
    const found = await store.listAmbiguous({ onCorrupt: (e) => corrupt.push(e) });
    expect(found.map((r) => r.redisKey)).toContain(store.redisKey(ambiguous));
    // Other tests of this file left corrupt keys under the same prefix too.
    expect(corrupt.map((e) => e.redisKey)).toContain(store.redisKey(broken));
    expect(corrupt.every((e) => e.code === 'receipt.corrupt')).toBe(true);
    expect((await store.listAmbiguous()).map((r) => r.redisKey)).toContain(store.redisKey(ambiguous));
    await redis.del(store.redisKey(broken));
  });
});
