import calculateSlot from 'cluster-key-slot';
import { describe, expect, it } from 'vitest';
import { MAX_TOOL_FAILURES, MAX_TOOL_REJECTIONS } from '../../src/core/tiers.js';
import { BreakerStore } from '../../src/redis/receipts/transitions/breaker-store.js';
import { receiptRedisKey } from '../../src/redis/keys.js';
import { freshKey, useRedis } from '../support/redis-fixture.js';

const fixture = useRedis();

function breaker(options: { maxFailures?: number; maxRejections?: number; retentionMs?: number } = {}): BreakerStore {
  return new BreakerStore({ redis: fixture.client(), prefix: fixture.handle().prefix, ...options });
}

describe('BreakerStore', () => {
  it('removes a tool when its failures reach MAX_TOOL_FAILURES, once', async () => {
    const b = breaker();
    const { tenantId, runId, toolName } = freshKey();
    for (let i = 1; i < MAX_TOOL_FAILURES; i++) {
      expect(await b.recordFailure(tenantId, runId, toolName)).toEqual({ failures: i, removed: false, removedNow: false });
    }
    expect(await b.removal(tenantId, runId, toolName)).toBeNull();
    expect(await b.recordFailure(tenantId, runId, toolName)).toEqual({ failures: MAX_TOOL_FAILURES, removed: true, removedNow: true });
    expect(await b.removal(tenantId, runId, toolName)).toBe(`removed after ${MAX_TOOL_FAILURES} failures`);
    expect(await b.recordFailure(tenantId, runId, toolName, { removeNow: true, reason: 'later' })).toEqual({
      failures: MAX_TOOL_FAILURES + 1,
      removed: true,
      removedNow: false,
    });
    expect(await b.removal(tenantId, runId, toolName)).toBe(`removed after ${MAX_TOOL_FAILURES} failures`);
  });

  it('removes a tool at once on a destructive failure, with the given reason', async () => {
    const b = breaker();
    const { tenantId, runId } = freshKey();
    expect(await b.recordFailure(tenantId, runId, 'rm', { removeNow: true, reason: 'destructive: rm -rf started' })).toEqual({
      failures: 1,
      removed: true,
      removedNow: true,
    });
    expect(await b.removal(tenantId, runId, 'rm')).toBe('destructive: rm -rf started');
    expect(await b.removal(tenantId, runId, 'ls')).toBeNull();
  });

  it('removes a tool after MAX_TOOL_REJECTIONS consecutive rejections; a success resets only the streak', async () => {
    const b = breaker();
    const { tenantId, runId, toolName } = freshKey();
    for (let i = 1; i < MAX_TOOL_REJECTIONS; i++) {
      expect((await b.recordRejection(tenantId, runId, toolName)).rejections).toBe(i);
    }
    await b.recordFailure(tenantId, runId, toolName);
    await b.recordSuccess(tenantId, runId, toolName);
    expect(await b.recordRejection(tenantId, runId, toolName)).toEqual({ rejections: 1, removed: false, removedNow: false });
    for (let i = 2; i < MAX_TOOL_REJECTIONS; i++) await b.recordRejection(tenantId, runId, toolName);
    expect(await b.recordRejection(tenantId, runId, toolName)).toEqual({
      rejections: MAX_TOOL_REJECTIONS,
      removed: true,
      removedNow: true,
    });
    expect(await b.removal(tenantId, runId, toolName)).toBe(`removed after ${MAX_TOOL_REJECTIONS} consecutive rejections`);
    // Failures were kept across the success: one so far, plus this one.
    expect((await b.recordFailure(tenantId, runId, toolName)).failures).toBe(2);
    // A success does not bring a removed tool back.
    await b.recordSuccess(tenantId, runId, toolName);
    expect(await b.removal(tenantId, runId, toolName)).not.toBeNull();
  });

  it('state reads the removal and the rejection streak together', async () => {
    const b = breaker();
    const { tenantId, runId, toolName } = freshKey();
    expect(await b.state(tenantId, runId, toolName)).toEqual({ removal: null, rejections: 0 });
    await b.recordRejection(tenantId, runId, toolName);
    await b.recordRejection(tenantId, runId, toolName);
    expect(await b.state(tenantId, runId, toolName)).toEqual({ removal: null, rejections: 2 });
    await b.recordSuccess(tenantId, runId, toolName);
    await b.recordFailure(tenantId, runId, toolName, { removeNow: true, reason: 'gone' });
    expect(await b.state(tenantId, runId, toolName)).toEqual({ removal: 'gone', rejections: 0 });
  });

  it('keeps tools, runs and tenants apart, hostile names included', async () => {
    const b = breaker({ maxFailures: 1 });
    const { tenantId, runId } = freshKey();
    await b.recordFailure(tenantId, runId, 'a:failures');
    expect(await b.removal(tenantId, runId, 'a')).toBeNull();
    expect(await b.removal(tenantId, runId, 'a:failures')).not.toBeNull();
    expect(await b.removal(tenantId, `${runId}x`, 'a:failures')).toBeNull();
    expect(await b.removal(`${tenantId}x`, runId, 'a:failures')).toBeNull();
    expect(Object.keys(await fixture.connect().hgetall(b.redisKey(tenantId, runId))).sort()).toEqual([
      'a%3Afailures:failures',
      'a%3Afailures:removed',
    ]);
  });

  it('is one hash per run in the slot of the run receipts, expiring retentionMs after the last record', async () => {
    const b = breaker({ retentionMs: 30_000 });
    const key = freshKey({ tenantId: 'x{y}', runId: 'r|1 2' });
    expect(calculateSlot(b.redisKey(key.tenantId, key.runId))).toBe(calculateSlot(receiptRedisKey(b.prefix, key)));
    await b.recordRejection(key.tenantId, key.runId, key.toolName);
    const pttl = await fixture.connect().pttl(b.redisKey(key.tenantId, key.runId));
    expect(pttl).toBeGreaterThan(25_000);
    expect(pttl).toBeLessThanOrEqual(30_000);
  });

  it('counts concurrent failures exactly and removes the tool exactly once', async () => {
    const stores = Array.from({ length: 16 }, () => breaker());
    const { tenantId, runId, toolName } = freshKey();
    const results = await Promise.all(stores.map((s) => s.recordFailure(tenantId, runId, toolName)));
    expect(results.map((r) => r.failures).sort((x, y) => x - y)).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
    expect(results.filter((r) => r.removedNow)).toHaveLength(1);
    expect(results.find((r) => r.removedNow)!.failures).toBe(MAX_TOOL_FAILURES);
  });

  it('rejects non-positive limits', () => {
    expect(() => breaker({ maxFailures: 0 })).toThrow(expect.objectContaining({ code: 'options.invalid', option: 'maxFailures' }));
    expect(() => breaker({ maxRejections: Number.NaN })).toThrow(
      expect.objectContaining({ code: 'options.invalid', option: 'maxRejections' }),
    );
  });
});
