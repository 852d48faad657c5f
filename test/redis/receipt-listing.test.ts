/**
 * Reading receipts back: one, a whole run, and every ambiguous one.
 */
import { describe, expect, it } from 'vitest';
import { claimFence, freshKey, runIndexEntryOf, useRedis, waitForLeaseExpiry, waitUntil } from '../support/redis-fixture.js';

const fixture = useRedis();

describe('inspect', () => {
  it('returns every documented field, typed, and null for no receipt', async () => {
    const store = fixture.store({ retentionMs: 60_000 });
    const key = freshKey({ tenantId: 'acme {eu}', runId: 'run:7|b', toolName: 'send email\n' });
    expect(await store.inspect(key)).toBeNull();
    const claimed = await store.claim(key, { effect: 'resumable', leaseMs: 30_000, owner: 'w-1' });
    await store.recordStep(key, claimed.fence!, 'render', { bytes: 12 });
    await store.fail(key, claimed.fence!, { error: 'smtp down', tier: 'neutral' });
    const record = await store.inspect(key);
    expect(record).toMatchObject({
      key,
      redisKey: store.redisKey(key),
      status: 'failed',
      attempts: 1,
      epoch: claimed.fence!.epoch,
      leaseUntilMs: null,
      leaseExpired: false,
      owner: 'w-1',
      effect: 'resumable',
      error: 'smtp down',
      tier: 'neutral',
      ambiguousMs: null,
      resolvedMs: null,
      lateHeartbeatMs: null,
      lateSettle: null,
      steps: { render: { bytes: 12 } },
    });
    expect(record!.createdMs).toBe(claimed.leaseUntilMs! - 30_000);
    expect(record!.completedMs).toBeGreaterThanOrEqual(record!.createdMs);
    expect(record!.updatedMs).toBe(record!.completedMs);
    expect(record!.ttlMs).toBeGreaterThan(50_000);
    expect('result' in record!).toBe(false);
  });

  it.each([2, 5] as const)(
    'layout %i: the first attempt started at creation, a takeover when it took over; the last write is a heartbeat, then the settle',
    async (receiptLayout) => {
      const store = fixture.store({ receiptLayout });
      const key = freshKey();
      const first = await claimFence(store, key, { effect: 'resumable', leaseMs: 300 });
      const created = (await store.inspect(key))!;
      expect(created.startedMs).toBe(created.createdMs);
      expect(created.updatedMs).toBe(created.createdMs);
      // A heartbeat on a later millisecond of the server clock is the last write.
      await waitUntil(
        () => store.heartbeat(key, first, 300),
        (beat) => beat.leaseUntilMs > created.leaseUntilMs!,
        5_000,
        'a heartbeat a tick later',
      );
      const beaten = (await store.inspect(key))!;
      expect(beaten.updatedMs).toBeGreaterThan(created.createdMs);
      expect(beaten.startedMs).toBe(created.createdMs);
      await waitForLeaseExpiry(store, key);
      const second = await claimFence(store, key, { effect: 'resumable', leaseMs: 30_000 });
      expect(second.attempt).toBe(2);
      const taken = (await store.inspect(key))!;
      expect(taken.startedMs).toBeGreaterThan(created.createdMs);
      expect(taken.updatedMs).toBe(taken.startedMs);
      await store.complete(key, second, { ok: 1 });
      const settled = (await store.inspect(key))!;
      expect(settled.updatedMs).toBe(settled.completedMs);
      expect(settled.startedMs).toBe(taken.startedMs);
      expect(settled.createdMs).toBe(created.createdMs);
    },
  );

  it.each([2, 5] as const)(
    'stores no raw arguments, in layout %i: only bookkeeping, and the four key parts in layout 2',
    async (receiptLayout) => {
      const store = fixture.store({ receiptLayout });
      const redis = fixture.connect();
      const key = freshKey();
      await store.complete(key, await claimFence(store, key, { effect: 'opaque' }), { ok: 1 });
      const fields = Object.keys(await redis.hgetall(store.redisKey(key))).sort();
      const keyParts = receiptLayout === 2 ? ['args_hash', 'run', 'tenant', 'tool'] : [];
      // Layout 5 leaves out the times that repeat created_ms and completed_ms; the record still gives them.
      const repeatedTimes = receiptLayout === 2 ? ['started_ms', 'updated_ms'] : [];
      expect(fields).toEqual(
        [
          ...keyParts,
          ...repeatedTimes,
          'attempts',
          'completed_ms',
          'created_ms',
          'effect',
          'epoch',
          'owner',
          'result',
          'schema',
          'status',
        ].sort(),
      );
      const record = (await store.inspect(key))!;
      expect(record.startedMs).toBe(record.createdMs);
      expect(record.updatedMs).toBe(record.completedMs);
    },
  );
});

describe('listRun', () => {
  it("lists a run's receipts oldest first, and only that run's", async () => {
    const store = fixture.store();
    const base = freshKey();
    const tools = ['c', 'a', 'b'];
    for (const toolName of tools) {
      await store.claim({ ...base, toolName }, { effect: 'opaque' });
      // Let the server clock move past this creation time so the next score differs.
      await waitUntil(
        () => store.inspect({ ...base, toolName }),
        (r) => r !== null && r.readAtMs > r.createdMs,
      );
    }
    await store.claim({ ...base, runId: `${base.runId}-other` }, { effect: 'opaque' });
    await store.claim({ ...base, tenantId: `${base.tenantId}-other` }, { effect: 'opaque' });
    const listed = await store.listRun(base.tenantId, base.runId);
    expect(listed.map((r) => r.key.toolName)).toEqual(tools);
    expect(listed.every((r) => r.key.runId === base.runId && r.key.tenantId === base.tenantId)).toBe(true);
    expect(await store.listRun('nobody', 'nothing')).toEqual([]);
  });

  it('drops and prunes entries whose receipt has expired', async () => {
    const store = fixture.store({ retentionMs: 200 });
    const keeper = fixture.store({ retentionMs: 60_000 });
    const redis = fixture.connect();
    const base = freshKey();
    const short = { ...base, toolName: 'short' };
    const long = { ...base, toolName: 'long' };
    await keeper.claim(long, { effect: 'opaque' });
    await store.complete(short, await claimFence(keeper, short, { effect: 'opaque' }), 'x');
    await waitUntil(
      () => store.inspect(short),
      (r) => r === null,
      10_000,
      'expiry',
    );
    expect(await redis.zcard(store.runIndexKey(base.tenantId, base.runId))).toBe(2);
    expect((await store.listRun(base.tenantId, base.runId)).map((r) => r.key.toolName)).toEqual(['long']);
    expect(await redis.zrange(store.runIndexKey(base.tenantId, base.runId), 0, -1)).toEqual([await runIndexEntryOf(redis, keeper, long)]);
  });
});

describe('listAmbiguous', () => {
  it('finds flagged and expired opaque receipts under its prefix only', async () => {
    const prefix = `${fixture.handle().prefix}:amb`;
    const store = fixture.store({ prefix, leaseMs: 150 });
    const otherPrefix = fixture.store({ prefix: `${prefix}:rcpt:x`, leaseMs: 150 });

    const flagged = freshKey({ toolName: 'flagged' });
    const unflaggedOpaque = freshKey({ toolName: 'opaque-unflagged' });
    const resumableFlagged = freshKey({ toolName: 'resumable-flagged' });
    const resumable = freshKey({ toolName: 'resumable' });
    const live = freshKey({ toolName: 'live' });
    const settled = freshKey({ toolName: 'settled' });
    const foreign = freshKey({ toolName: 'foreign' });

    await store.claim(flagged, { effect: 'opaque' });
    await store.claim(unflaggedOpaque, { effect: 'opaque' });
    await store.claim(resumableFlagged, { effect: 'resumable' });
    await store.claim(resumable, { effect: 'resumable' });
    await store.claim(live, { effect: 'opaque', leaseMs: 60_000 });
    await store.complete(settled, await claimFence(store, settled, { effect: 'opaque' }), 'ok');
    await otherPrefix.claim(foreign, { effect: 'opaque' });
    for (const k of [flagged, unflaggedOpaque, resumableFlagged, resumable]) await waitForLeaseExpiry(store, k);
    await waitForLeaseExpiry(otherPrefix, foreign);
    await store.claim(flagged, { effect: 'opaque' });
    // A resumable receipt is ambiguous to a caller that says the call is opaque.
    expect((await store.claim(resumableFlagged, { effect: 'opaque' })).decision.kind).toBe('ambiguous');

    const found = await store.listAmbiguous({ count: 2 });
    expect(found.map((r) => r.key.toolName).sort()).toEqual(['flagged', 'opaque-unflagged', 'resumable-flagged']);
    expect(found.find((r) => r.key.toolName === 'flagged')!.ambiguousMs).not.toBeNull();
    expect(found.find((r) => r.key.toolName === 'opaque-unflagged')!.ambiguousMs).toBeNull();

    await store.resolve(flagged, { attemptsSeen: 1, outcome: 'failed', error: 'checked: never sent' });
    expect((await store.listAmbiguous()).map((r) => r.key.toolName).sort()).toEqual(['opaque-unflagged', 'resumable-flagged']);
  });
});
