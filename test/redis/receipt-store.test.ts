/**
 * ReceiptStore transitions and fences, against a real Redis.
 */
import { describe, expect, it } from 'vitest';
import { FencedOutError, InvalidReceiptInputError, NotAmbiguousError, ReceiptValueNotSerializableError } from '../../src/redis/errors.js';
import { ReceiptStore } from '../../src/redis/receipts/store.js';
import { claimFence, freshKey, useRedis, waitForLeaseExpiry } from '../support/redis-fixture.js';

const fixture = useRedis();
const LEASE = 200;

describe('claim', () => {
  it('executes attempt 1 on an absent receipt, then tells later callers to wait', async () => {
    const store = fixture.store();
    const key = freshKey();
    const first = await store.claim(key, { effect: 'opaque', leaseMs: 10_000 });
    expect(first).toMatchObject({
      decision: { kind: 'execute', attempt: 1 },
      state: { kind: 'absent' },
      attempt: 1,
      leaseRemainingMs: 10_000,
      redisKey: store.redisKey(key),
    });
    const second = await store.claim(key, { effect: 'opaque' });
    expect(second.decision.kind).toBe('wait');
    expect(second.state).toEqual({ kind: 'running', attempts: 1, leaseExpired: false, reportedAmbiguous: false });
    expect(first.fence).toEqual({ attempt: 1, epoch: expect.any(String) });
    expect(first.fence!.epoch.length).toBeGreaterThanOrEqual(16);
    expect(second.fence).toBeUndefined();
    expect(second.attempt).toBeUndefined();
    expect(second.leaseRemainingMs).toBeGreaterThan(0);
    expect(second.leaseRemainingMs).toBeLessThanOrEqual(10_000);
  });

  it('replays a completed result without running anything', async () => {
    const store = fixture.store();
    const key = freshKey();
    const { fence } = await store.claim(key, { effect: 'opaque' });
    await store.complete(key, fence!, { messageId: 'm-1', sent: [1, 2] });
    const again = await store.claim(key, { effect: 'opaque' });
    expect(again).toMatchObject({ decision: { kind: 'replay' }, state: { kind: 'completed' }, result: { messageId: 'm-1', sent: [1, 2] } });
    expect(again.attempt).toBeUndefined();
  });

  it('replays a completion without a value as undefined, and null as null', async () => {
    const store = fixture.store();
    const a = freshKey();
    await store.complete(a, await claimFence(store, a, { effect: 'opaque' }), undefined);
    const ra = await store.claim(a, { effect: 'opaque' });
    expect(ra.decision.kind).toBe('replay');
    expect('result' in ra).toBe(false);
    const b = freshKey();
    await store.complete(b, await claimFence(store, b, { effect: 'opaque' }), null);
    expect(await store.claim(b, { effect: 'opaque' })).toMatchObject({ decision: { kind: 'replay' }, result: null });
  });

  it('runs a failed call again as the next attempt, for either effect', async () => {
    const store = fixture.store();
    for (const effect of ['opaque', 'resumable'] as const) {
      const key = freshKey();
      const first = await claimFence(store, key, { effect });
      await store.fail(key, first, { error: 'smtp 421', tier: 'neverStarted' });
      const retry = await store.claim(key, { effect });
      expect(retry).toMatchObject({ decision: { kind: 'execute', attempt: 2 }, attempt: 2, state: { kind: 'failed', attempts: 1 } });
      expect(retry.fence).toEqual({ attempt: 2, epoch: first.epoch });
      const record = await store.inspect(key);
      expect(record).toMatchObject({ status: 'running', attempts: 2, error: null, tier: null });
    }
  });

  it('takes over a resumable attempt whose lease expired; the steps survive for it', async () => {
    const store = fixture.store({ leaseMs: LEASE });
    const key = freshKey();
    await store.recordStep(key, await claimFence(store, key, { effect: 'resumable' }), 'draft', { id: 'd-1' });
    await waitForLeaseExpiry(store, key);
    const takeover = await store.claim(key, { effect: 'resumable', owner: 'worker-b' });
    expect(takeover).toMatchObject({
      decision: { kind: 'execute', attempt: 2 },
      state: { kind: 'running', attempts: 1, leaseExpired: true, reportedAmbiguous: false },
    });
    expect(await store.steps(key)).toEqual({ draft: { id: 'd-1' } });
    expect((await store.inspect(key))?.owner).toBe('worker-b');
  });

  it('treats the call as opaque when either the first claim or this one says so', async () => {
    const store = fixture.store({ leaseMs: LEASE });
    const storedOpaque = freshKey();
    await store.claim(storedOpaque, { effect: 'opaque' });
    await waitForLeaseExpiry(store, storedOpaque);
    const a = await store.claim(storedOpaque, { effect: 'resumable' });
    expect(a).toMatchObject({ decision: { kind: 'ambiguous' }, effect: 'opaque' });

    const requestedOpaque = freshKey();
    await store.claim(requestedOpaque, { effect: 'resumable' });
    await waitForLeaseExpiry(store, requestedOpaque);
    const b = await store.claim(requestedOpaque, { effect: 'opaque' });
    expect(b).toMatchObject({ decision: { kind: 'ambiguous' }, effect: 'opaque' });
    expect((await store.inspect(requestedOpaque))?.effect).toBe('resumable');
  });

  it('reports an expired opaque attempt as ambiguous to every later claim, and stamps ambiguous_ms once', async () => {
    const store = fixture.store({ leaseMs: LEASE });
    const key = freshKey();
    await store.claim(key, { effect: 'opaque' });
    await waitForLeaseExpiry(store, key);
    const seen = [];
    for (let i = 0; i < 5; i++) seen.push(await store.claim(key, { effect: 'opaque' }));
    for (const c of seen) {
      expect(c.decision.kind).toBe('ambiguous');
      expect(c.state).toMatchObject({ kind: 'running', attempts: 1, leaseExpired: true });
      expect(c.attempt).toBeUndefined();
      expect(c.ambiguousMs).toBe(seen[0]!.ambiguousMs);
    }
    const record = await store.inspect(key);
    expect(record).toMatchObject({ status: 'running', attempts: 1, leaseExpired: true, ambiguousMs: seen[0]!.ambiguousMs });
    expect(record!.ambiguousMs).toBeGreaterThanOrEqual(record!.leaseUntilMs!);
  });

  it('rejects bad input before touching Redis', async () => {
    const store = fixture.store();
    const key = freshKey();
    await expect(store.claim(key, { effect: 'maybe' as never })).rejects.toBeInstanceOf(InvalidReceiptInputError);
    await expect(store.claim(key, { effect: 'opaque', leaseMs: 0 })).rejects.toMatchObject({ code: 'receipt.invalid_input' });
    await expect(store.claim(key, { effect: 'opaque', leaseMs: 1.5 })).rejects.toBeInstanceOf(InvalidReceiptInputError);
    expect(await store.inspect(key)).toBeNull();
    expect(() => fixture.store({ retentionMs: -1 })).toThrow(expect.objectContaining({ code: 'options.invalid', option: 'retentionMs' }));
  });
});

describe('fenced writes', () => {
  it('complete, fail, heartbeat and recordStep by the owning attempt succeed', async () => {
    const store = fixture.store();
    const key = freshKey();
    const fence = await claimFence(store, key, { effect: 'resumable', leaseMs: 1_000 });
    const before = await store.inspect(key);
    const { leaseUntilMs, contested } = await store.heartbeat(key, fence, 60_000);
    expect(contested).toBe(false);
    expect(leaseUntilMs).toBeGreaterThan(before!.leaseUntilMs!);
    expect((await store.inspect(key))?.leaseUntilMs).toBe(leaseUntilMs);
    await store.recordStep(key, fence, 'a', 1);
    await store.recordStep(key, fence, 'b:with:colons', { nested: ['x'] });
    await store.recordStep(key, fence, 'a', 2);
    expect(await store.steps(key)).toEqual({ a: 2, 'b:with:colons': { nested: ['x'] } });
    expect(await store.complete(key, fence, 'done')).toMatchObject({ late: null, settledMs: expect.any(Number) });
    expect(await store.inspect(key)).toMatchObject({ status: 'completed', result: 'done', leaseUntilMs: null, leaseExpired: false });
  });

  it('every fenced write by a wrong attempt or a wrong epoch throws FencedOutError with what it found, and writes nothing', async () => {
    const store = fixture.store();
    const key = freshKey();
    const { epoch } = await claimFence(store, key, { effect: 'resumable' });
    const before = await store.inspect(key);
    for (const fence of [
      { attempt: 2, epoch },
      { attempt: 1, epoch: 'guessed' },
      { attempt: 1, epoch: '' },
    ]) {
      const writes = [
        () => store.complete(key, fence, 'x'),
        () => store.fail(key, fence, { error: 'x' }),
        () => store.heartbeat(key, fence),
        () => store.recordStep(key, fence, 's', 1),
        () => store.markOutcomeUnknown(key, fence, 'x'),
      ];
      for (const write of writes) {
        const err = await write().catch((e: unknown) => e);
        expect(err).toBeInstanceOf(FencedOutError);
        expect(err).toMatchObject({
          code: 'receipt.fenced_out',
          attempt: fence.attempt,
          epoch: fence.epoch,
          redisKey: store.redisKey(key),
          observed: { status: 'running', attempts: 1, epoch },
        });
      }
    }
    await expect(store.complete(key, { attempt: 1 } as never, 'x')).rejects.toBeInstanceOf(InvalidReceiptInputError);
    await expect(store.complete(key, 1 as never, 'x')).rejects.toBeInstanceOf(InvalidReceiptInputError);
    const after = await store.inspect(key);
    expect({ ...after, readAtMs: 0, ttlMs: 0 }).toEqual({ ...before, readAtMs: 0, ttlMs: 0 });
  });

  it('markOutcomeUnknown leaves the receipt as a crash would: an opaque one ambiguous at once, a resumable one ready for takeover', async () => {
    const store = fixture.store();
    const opaque = freshKey();
    const opaqueFence = await claimFence(store, opaque, { effect: 'opaque', leaseMs: 60_000 });
    const marked = await store.markOutcomeUnknown(opaque, opaqueFence, 'gateway timed out');
    expect(marked.ambiguousMs).not.toBeNull();
    expect(await store.inspect(opaque)).toMatchObject({
      status: 'running',
      attempts: 1,
      leaseExpired: true,
      error: 'gateway timed out',
      ambiguousMs: marked.ambiguousMs,
    });
    expect((await store.listAmbiguous()).map((r) => r.redisKey)).toContain(store.redisKey(opaque));
    expect((await store.claim(opaque, { effect: 'opaque' })).decision.kind).toBe('ambiguous');

    const resumable = freshKey();
    const resumableFence = await claimFence(store, resumable, { effect: 'resumable', leaseMs: 60_000 });
    expect((await store.markOutcomeUnknown(resumable, resumableFence, 'reset')).ambiguousMs).toBeNull();
    expect((await store.inspect(resumable))?.ambiguousMs).toBeNull();
    expect((await store.claim(resumable, { effect: 'resumable' })).decision).toEqual({ kind: 'execute', attempt: 2 });
  });

  it('a settled receipt fences out every write, including a second completion', async () => {
    const store = fixture.store();
    const key = freshKey();
    const fence = await claimFence(store, key, { effect: 'opaque' });
    await store.fail(key, fence, { error: 'nope' });
    for (const write of [
      () => store.complete(key, fence, 'x'),
      () => store.fail(key, fence, { error: 'again' }),
      () => store.heartbeat(key, fence),
      () => store.recordStep(key, fence, 's', 1),
    ]) {
      await expect(write()).rejects.toMatchObject({ code: 'receipt.fenced_out', observed: { status: 'failed', attempts: 1 } });
    }
    expect(await store.inspect(key)).toMatchObject({ status: 'failed', error: 'nope', tier: null });
  });

  it('writes to a receipt that does not exist are fenced out with observed = null', async () => {
    const store = fixture.store();
    const key = freshKey();
    await expect(store.complete(key, { attempt: 1, epoch: 'x' }, 1)).rejects.toMatchObject({ code: 'receipt.fenced_out', observed: null });
    await expect(store.heartbeat(key, { attempt: 1, epoch: 'x' })).rejects.toMatchObject({ observed: null });
    expect(await store.inspect(key)).toBeNull();
  });

  it('the stale attempt 1 cannot write once attempt 2 has taken over', async () => {
    const store = fixture.store({ leaseMs: LEASE });
    const key = freshKey();
    const stale = await claimFence(store, key, { effect: 'resumable' });
    await waitForLeaseExpiry(store, key);
    const second = await claimFence(store, key, { effect: 'resumable' });
    expect(second.attempt).toBe(2);
    for (const write of [
      () => store.complete(key, stale, 'late'),
      () => store.fail(key, stale, { error: 'late' }),
      () => store.heartbeat(key, stale),
      () => store.recordStep(key, stale, 'late', true),
    ]) {
      await expect(write()).rejects.toMatchObject({ code: 'receipt.fenced_out', attempt: 1, observed: { status: 'running', attempts: 2 } });
    }
    expect(await store.steps(key)).toEqual({});
    await store.complete(key, second, 'on time');
    expect(await store.claim(key, { effect: 'resumable' })).toMatchObject({ decision: { kind: 'replay' }, result: 'on time' });
  });

  it('an opaque attempt that outlived its lease may still settle it when nobody took over, recorded as late', async () => {
    const store = fixture.store({ leaseMs: LEASE });
    const key = freshKey();
    const fence = await claimFence(store, key, { effect: 'opaque' });
    await waitForLeaseExpiry(store, key);
    const verdict = await store.claim(key, { effect: 'opaque' });
    expect(verdict.decision.kind).toBe('ambiguous');
    const settled = await store.complete(key, fence, 'it did land');
    expect(settled.late).toEqual({ attempt: 1, ambiguousMs: verdict.ambiguousMs });
    expect(await store.inspect(key)).toMatchObject({
      status: 'completed',
      ambiguousMs: verdict.ambiguousMs,
      lateSettle: { atMs: settled.settledMs, attempt: 1 },
    });
    expect(await store.claim(key, { effect: 'opaque' })).toMatchObject({ decision: { kind: 'replay' }, result: 'it did land' });
  });

  it('refuses values with no faithful JSON form before writing anything', async () => {
    const store = fixture.store();
    const key = freshKey();
    const fence = await claimFence(store, key, { effect: 'resumable' });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const bad of [() => 1, Symbol('s'), 10n, new Map([[1, 2]]), new Set([1]), NaN, Infinity, cyclic, { nested: { f: () => 1 } }]) {
      await expect(store.complete(key, fence, bad)).rejects.toBeInstanceOf(ReceiptValueNotSerializableError);
      await expect(store.recordStep(key, fence, 's', bad)).rejects.toMatchObject({ code: 'receipt.not_serializable' });
    }
    expect(await store.inspect(key)).toMatchObject({ status: 'running', steps: {} });
    await expect(store.recordStep(key, fence, '', 1)).rejects.toBeInstanceOf(InvalidReceiptInputError);
    await store.complete(key, fence, { at: new Date(0) });
    expect((await store.inspect(key))?.result).toEqual({ at: '1970-01-01T00:00:00.000Z' });
  });
});

describe('resolve', () => {
  it('settles an ambiguous receipt as completed: later claims replay the operator result', async () => {
    const store = fixture.store({ leaseMs: LEASE });
    const key = freshKey();
    await store.claim(key, { effect: 'opaque' });
    await waitForLeaseExpiry(store, key);
    await store.claim(key, { effect: 'opaque' });
    await store.resolve(key, { attemptsSeen: 1, outcome: 'completed', result: { messageId: 'found-in-provider-log' } });
    expect(await store.claim(key, { effect: 'opaque' })).toMatchObject({
      decision: { kind: 'replay' },
      result: { messageId: 'found-in-provider-log' },
    });
    const record = await store.inspect(key);
    expect(record).toMatchObject({ status: 'completed', attempts: 1 });
    expect(record!.resolvedMs).toBe(record!.completedMs);
  });

  it('settles an ambiguous receipt as failed: the next claim runs it again as attempt 2', async () => {
    const store = fixture.store({ leaseMs: LEASE });
    const key = freshKey();
    await store.claim(key, { effect: 'opaque' });
    await waitForLeaseExpiry(store, key);
    await store.resolve(key, { attemptsSeen: 1, outcome: 'failed', error: 'provider has no record of it' });
    expect(await store.inspect(key)).toMatchObject({ status: 'failed', error: 'provider has no record of it' });
    const retry = await store.claim(key, { effect: 'opaque' });
    expect(retry).toMatchObject({ decision: { kind: 'execute', attempt: 2 }, attempt: 2 });
    expect((await store.inspect(key))?.ambiguousMs).toBeNull();
  });

  it('refuses a receipt that is not ambiguous, or that changed since the operator looked', async () => {
    const store = fixture.store({ leaseMs: LEASE });
    const live = freshKey();
    await store.claim(live, { effect: 'opaque', leaseMs: 60_000 });
    const notAmbiguous = await store.resolve(live, { attemptsSeen: 1, outcome: 'failed', error: 'x' }).catch((e: unknown) => e);
    expect(notAmbiguous).toBeInstanceOf(NotAmbiguousError);
    expect(notAmbiguous).toMatchObject({ code: 'receipt.not_ambiguous', observed: { status: 'running', attempts: 1 } });

    const resumable = freshKey();
    await store.claim(resumable, { effect: 'resumable' });
    await waitForLeaseExpiry(store, resumable);
    await expect(store.resolve(resumable, { attemptsSeen: 1, outcome: 'failed', error: 'x' })).rejects.toBeInstanceOf(NotAmbiguousError);

    const opaque = freshKey();
    const opaqueFence = await claimFence(store, opaque, { effect: 'opaque' });
    await waitForLeaseExpiry(store, opaque);
    await expect(store.resolve(opaque, { attemptsSeen: 2, outcome: 'failed', error: 'x' })).rejects.toMatchObject({
      code: 'receipt.fenced_out',
      observed: { status: 'running', attempts: 1 },
    });
    await expect(
      store.resolve(opaque, { attemptsSeen: 1, epochSeen: 'another-lifetime', outcome: 'failed', error: 'x' }),
    ).rejects.toMatchObject({
      code: 'receipt.fenced_out',
      observed: { status: 'running', attempts: 1, epoch: opaqueFence.epoch },
    });
    await expect(store.resolve(opaque, { attemptsSeen: 1, epochSeen: '', outcome: 'failed', error: 'x' })).rejects.toBeInstanceOf(
      InvalidReceiptInputError,
    );
    await store.complete(opaque, opaqueFence, 'late but real');
    await expect(store.resolve(opaque, { attemptsSeen: 1, outcome: 'failed', error: 'x' })).rejects.toMatchObject({
      code: 'receipt.fenced_out',
      observed: { status: 'completed', attempts: 1 },
    });
    await expect(store.resolve(freshKey(), { attemptsSeen: 1, outcome: 'failed', error: 'x' })).rejects.toMatchObject({ observed: null });
  });
});

describe('construction', () => {
  it('uses the trc prefix by default and a per-store owner', () => {
    const a = new ReceiptStore({ redis: fixture.connect() });
    const b = new ReceiptStore({ redis: fixture.connect() });
    expect(a.prefix).toBe('trc');
    expect(a.redisKey({ tenantId: 'a', runId: 'b', toolName: 't', argsHash: 'h' })).toBe('trc:rcpt:{a|b}:t:h');
    expect(a.owner).toMatch(/^.+:\d+:[0-9a-f]{8}$/);
    expect(a.owner).not.toBe(b.owner);
  });

  it('works again after SCRIPT FLUSH (EVALSHA falls back on NOSCRIPT)', async () => {
    const store = fixture.store();
    const redis = fixture.connect();
    const key = freshKey();
    const fence = await claimFence(store, key, { effect: 'opaque' });
    await redis.script('FLUSH');
    expect((await store.claim(key, { effect: 'opaque' })).decision.kind).toBe('wait');
    await store.complete(key, fence, 1);
  });
});
