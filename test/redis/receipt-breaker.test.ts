/**
 * ReceiptStore and the run's circuit breaker: claim reads the tool's removal
 * and rejection streak in its own script and writes nothing for a removed
 * tool it would execute; complete ends the rejection streak.
 */
import { describe, expect, it } from 'vitest';
import { BreakerStore } from '../../src/redis/receipts/transitions/breaker-store.js';
import { breakerField } from '../../src/redis/keys.js';
import { freshKey, useRedis, waitForLeaseExpiry } from '../support/redis-fixture.js';

const fixture = useRedis();
const LEASE = 200;

function stores(options: { leaseMs?: number } = {}) {
  const store = fixture.store(options);
  const breaker = new BreakerStore({ redis: fixture.client(), prefix: store.prefix });
  return { store, breaker, redis: fixture.connect() };
}

describe('claim with the breaker', () => {
  it('reports no removal and a streak of 0 when the run has no breaker hash, and creates none', async () => {
    const { store, breaker, redis } = stores();
    const key = freshKey();
    const claim = await store.claim(key, { effect: 'opaque' });
    expect(claim).toMatchObject({ decision: { kind: 'execute', attempt: 1 }, attempt: 1, rejectionStreak: 0 });
    expect('toolRemoval' in claim).toBe(false);
    expect(await redis.exists(breaker.redisKey(key.tenantId, key.runId))).toBe(0);
  });

  it('reports the rejection streak of the tool with the claim', async () => {
    const { store, breaker } = stores();
    const key = freshKey();
    await breaker.recordRejection(key.tenantId, key.runId, key.toolName);
    await breaker.recordRejection(key.tenantId, key.runId, key.toolName);
    await breaker.recordRejection(key.tenantId, key.runId, 'another_tool');
    const claim = await store.claim(key, { effect: 'opaque' });
    expect(claim).toMatchObject({ decision: { kind: 'execute', attempt: 1 }, attempt: 1, rejectionStreak: 2 });
    expect(claim.toolRemoval).toBeUndefined();
  });

  it('writes nothing for a removed tool with no receipt: no receipt, no index entry, no attempt', async () => {
    const { store, breaker, redis } = stores();
    const key = freshKey();
    await breaker.recordFailure(key.tenantId, key.runId, key.toolName, { removeNow: true, reason: 'send_email was removed.' });
    const breakerBefore = await redis.hgetall(breaker.redisKey(key.tenantId, key.runId));
    const claim = await store.claim(key, { effect: 'opaque' });
    expect(claim).toMatchObject({
      decision: { kind: 'execute', attempt: 1 },
      state: { kind: 'absent' },
      toolRemoval: 'send_email was removed.',
      rejectionStreak: 0,
      redisKey: store.redisKey(key),
    });
    expect(claim.attempt).toBeUndefined();
    expect(claim.leaseUntilMs).toBeUndefined();
    expect(await redis.exists(store.redisKey(key))).toBe(0);
    expect(await redis.exists(store.runIndexKey(key.tenantId, key.runId))).toBe(0);
    expect(await store.inspect(key)).toBeNull();
    expect(await store.listRun(key.tenantId, key.runId)).toEqual([]);
    expect(await redis.hgetall(breaker.redisKey(key.tenantId, key.runId))).toEqual(breakerBefore);
    // Another run, or another tool of the same run, is unaffected.
    expect((await store.claim({ ...key, runId: `${key.runId}-other` }, { effect: 'opaque' })).attempt).toBe(1);
    expect((await store.claim({ ...key, toolName: 'lookup' }, { effect: 'opaque' })).attempt).toBe(1);
  });

  it('never reclaims a failed receipt of a removed tool', async () => {
    const { store, breaker } = stores();
    const key = freshKey();
    await store.fail(key, (await store.claim(key, { effect: 'opaque' })).fence!, { error: 'boom', tier: 'neutral' });
    await breaker.recordFailure(key.tenantId, key.runId, key.toolName, { removeNow: true, reason: 'gone' });
    const before = await store.inspect(key);
    for (let i = 0; i < 3; i++) {
      const claim = await store.claim(key, { effect: 'resumable' });
      expect(claim).toMatchObject({
        decision: { kind: 'execute', attempt: 2 },
        state: { kind: 'failed', attempts: 1 },
        toolRemoval: 'gone',
      });
      expect(claim.attempt).toBeUndefined();
    }
    const after = await store.inspect(key);
    expect(after).toMatchObject({ status: 'failed', attempts: 1, error: 'boom' });
    expect({ ...after, readAtMs: 0, ttlMs: 0 }).toEqual({ ...before, readAtMs: 0, ttlMs: 0 });
  });

  it('never takes over an expired resumable attempt of a removed tool', async () => {
    const { store, breaker } = stores({ leaseMs: LEASE });
    const key = freshKey();
    await store.claim(key, { effect: 'resumable' });
    await waitForLeaseExpiry(store, key);
    await breaker.recordFailure(key.tenantId, key.runId, key.toolName, { removeNow: true, reason: 'gone' });
    const claim = await store.claim(key, { effect: 'resumable' });
    expect(claim).toMatchObject({ decision: { kind: 'execute', attempt: 2 }, toolRemoval: 'gone' });
    expect(claim.attempt).toBeUndefined();
    expect(await store.inspect(key)).toMatchObject({ status: 'running', attempts: 1, leaseExpired: true });
  });

  it('replays, waits and reports ambiguity as usual for a removed tool, with the removal', async () => {
    const { store, breaker } = stores({ leaseMs: LEASE });
    const done = freshKey();
    const live = freshKey({ tenantId: done.tenantId, runId: done.runId, argsHash: `${done.argsHash}-live` });
    const lost = freshKey({ tenantId: done.tenantId, runId: done.runId, argsHash: `${done.argsHash}-lost` });
    await store.complete(done, (await store.claim(done, { effect: 'opaque' })).fence!, { id: 1 });
    await store.claim(lost, { effect: 'opaque' });
    await store.claim(live, { effect: 'opaque', leaseMs: 60_000 });
    await waitForLeaseExpiry(store, lost);
    await breaker.recordFailure(done.tenantId, done.runId, done.toolName, { removeNow: true, reason: 'gone' });

    expect(await store.claim(done, { effect: 'opaque' })).toMatchObject({
      decision: { kind: 'replay' },
      result: { id: 1 },
      toolRemoval: 'gone',
    });
    expect(await store.claim(live, { effect: 'opaque' })).toMatchObject({ decision: { kind: 'wait' }, toolRemoval: 'gone' });
    const ambiguous = await store.claim(lost, { effect: 'opaque' });
    expect(ambiguous).toMatchObject({ decision: { kind: 'ambiguous' }, toolRemoval: 'gone' });
    expect(ambiguous.ambiguousMs).toEqual(expect.any(Number));
    expect(await store.inspect(lost)).toMatchObject({ status: 'running', ambiguousMs: ambiguous.ambiguousMs });
  });
});

describe('complete with the breaker', () => {
  it('resets a non-zero rejection streak of the tool, keeps failures and other tools', async () => {
    const { store, breaker, redis } = stores();
    const key = freshKey();
    const brk = breaker.redisKey(key.tenantId, key.runId);
    await breaker.recordRejection(key.tenantId, key.runId, key.toolName);
    await breaker.recordRejection(key.tenantId, key.runId, key.toolName);
    await breaker.recordFailure(key.tenantId, key.runId, key.toolName);
    await breaker.recordRejection(key.tenantId, key.runId, 'lookup');
    const { fence } = await store.claim(key, { effect: 'opaque' });
    await store.complete(key, fence!, 'ok');
    expect(await breaker.state(key.tenantId, key.runId, key.toolName)).toEqual({ removal: null, rejections: 0 });
    expect(await redis.hget(brk, breakerField(key.toolName, 'failures'))).toBe('1');
    expect(await breaker.state(key.tenantId, key.runId, 'lookup')).toEqual({ removal: null, rejections: 1 });
    // The next rejection starts a new streak.
    expect((await breaker.recordRejection(key.tenantId, key.runId, key.toolName)).rejections).toBe(1);
  });

  it('leaves a missing breaker hash missing', async () => {
    const { store, breaker, redis } = stores();
    const key = freshKey();
    const { fence } = await store.claim(key, { effect: 'opaque' });
    await store.complete(key, fence!, 'ok');
    expect(await redis.exists(breaker.redisKey(key.tenantId, key.runId))).toBe(0);
  });
});
