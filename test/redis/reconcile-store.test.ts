/**
 * ReconcileStore: the reconcile lease, the fenced verdict and keyed re-runs,
 * against a real Redis. Every time is the server's.
 */
import { describe, expect, it } from 'vitest';
import { FencedOutError } from '../../src/redis/errors.js';
import { ReconcileStore } from '../../src/redis/receipts/transitions/reconcile-store.js';
import { freshKey, useRedis, waitForLeaseExpiry } from '../support/redis-fixture.js';

const fixture = useRedis();
const JOB = { queue: 'tools', prefix: 'bull', id: '17' };

/** A store pair on one connection, and a key whose opaque attempt 1 lost its lease. */
async function expired(options: { effect?: 'opaque' | 'resumable' } = {}) {
  const store = fixture.store();
  const reconciles = new ReconcileStore({ redis: fixture.client(), prefix: store.prefix });
  const key = freshKey();
  const { fence } = await store.claim(key, { effect: options.effect ?? 'opaque', leaseMs: 40, job: JOB });
  await waitForLeaseExpiry(store, key);
  // The fence of attempt 1, and of the attempt after it in the same lifetime.
  return { store, reconciles, key, f1: fence!, f2: { ...fence!, attempt: 2 } };
}

describe('reconcile lease', () => {
  it('is taken by one caller; the next is told how long to wait; a live attempt or a resumable one is not reconciled', async () => {
    const { store, reconciles, key, f1, f2 } = await expired();
    const first = await reconciles.begin(key, f1, 10_000, 'w1');
    const started = (await store.inspect(key))!.startedMs;
    expect(first).toMatchObject({ kind: 'begun', reconciles: 1, attemptStartedMs: started });
    const second = await reconciles.begin(key, f1, 10_000, 'w2');
    expect(second.kind).toBe('busy');
    expect(second.kind === 'busy' && second.remainingMs).toBeGreaterThan(9_000);
    expect(await reconciles.begin(key, f2, 10_000, 'w2')).toEqual({ kind: 'movedOn' });
    const during = await store.inspect(key);
    expect(during!.reconcilingUntilMs).toBeGreaterThan(during!.readAtMs);

    const live = freshKey();
    const liveClaim = await store.claim(live, { effect: 'opaque', leaseMs: 60_000 });
    expect(await reconciles.begin(live, liveClaim.fence!, 1_000, 'w1')).toEqual({ kind: 'movedOn' });
    // A fence of another lifetime (a guessed or stale epoch) is not reconciled either.
    expect(await reconciles.begin(key, { ...f1, epoch: 'not-this-lifetime' }, 1_000, 'w1')).toEqual({ kind: 'movedOn' });
    const resumable = await expired({ effect: 'resumable' });
    expect(await resumable.reconciles.begin(resumable.key, resumable.f1, 1_000, 'w1')).toEqual({ kind: 'movedOn' });
  });

  it("once lapsed, another caller takes it over and the first one's verdict is fenced out", async () => {
    const { store, reconciles, key, f1, f2 } = await expired();
    const stale = await reconciles.begin(key, f1, 30, 'w1');
    if (stale.kind !== 'begun') throw new Error(stale.kind);
    let fresh;
    while ((fresh = await reconciles.begin(key, f1, 10_000, 'w2')).kind === 'busy') await new Promise((r) => setTimeout(r, 10));
    expect(fresh).toMatchObject({ kind: 'begun', reconciles: 2 });
    await expect(
      reconciles.settle(key, { ...f1, reconciles: stale.reconciles, worker: 'w1' }, { verdict: 'completed', result: 'late' }),
    ).rejects.toBeInstanceOf(FencedOutError);
    expect(await store.inspect(key)).toMatchObject({ status: 'running', reconciled: null });
  });
});

describe('verdicts', () => {
  it('are dropped when the judged attempt heartbeats meanwhile: it was paused, not lost, and owns the call again', async () => {
    const { store, reconciles, key, f1, f2 } = await expired();
    await reconciles.begin(key, f1, 10_000, 'w1');
    await store.heartbeat(key, f1, 10_000);
    await expect(
      reconciles.settle(key, { ...f1, reconciles: 1, worker: 'w1' }, { verdict: 'not_started', leaseMs: 10_000 }),
    ).rejects.toBeInstanceOf(FencedOutError);
    expect(await store.inspect(key)).toMatchObject({ status: 'running', attempts: 1, leaseExpired: false, reconciled: null });
  });

  it('completed: settles the receipt with the result and records who decided it', async () => {
    const { store, reconciles, key, f1, f2 } = await expired();
    const begun = await reconciles.begin(key, f1, 10_000, 'w1');
    if (begun.kind !== 'begun') throw new Error(begun.kind);
    expect(await reconciles.settle(key, { ...f1, reconciles: 1, worker: 'w1' }, { verdict: 'completed', result: { id: 'm-1' } })).toEqual(
      f1,
    );
    const record = await store.inspect(key);
    expect(record).toMatchObject({ status: 'completed', attempts: 1, result: { id: 'm-1' }, reconcilingUntilMs: null });
    expect(record!.reconciled).toMatchObject({ verdict: 'completed', by: 'w1', attempt: 1, note: null });
    expect(record!.reconciled!.atMs).toBeGreaterThanOrEqual(begun.nowMs);
    expect((await store.claim(key, { effect: 'opaque' })).decision.kind).toBe('replay');
  });

  it('not_started: starts attempt 2 under a fresh lease, with its job recorded', async () => {
    const { store, reconciles, key, f1, f2 } = await expired();
    await reconciles.begin(key, f1, 10_000, 'w1');
    const job2 = { ...JOB, id: '18' };
    expect(
      await reconciles.settle(key, { ...f1, reconciles: 1, worker: 'w1' }, { verdict: 'not_started', leaseMs: 10_000, job: job2 }),
    ).toEqual(f2);
    const record = await store.inspect(key);
    expect(record).toMatchObject({ status: 'running', attempts: 2, owner: 'w1', leaseExpired: false, ambiguousMs: null });
    expect(record!.jobs).toEqual([
      { ...JOB, attempt: 1 },
      { ...job2, attempt: 2 },
    ]);
    expect(record!.startedMs).toBeGreaterThan(record!.createdMs - 1);
    await store.complete(key, f2, 'sent');
  });

  it('unknown: the call stays ambiguous for a person, and a later reconcile of the same attempt is not begun', async () => {
    const { store, reconciles, key, f1, f2 } = await expired();
    await reconciles.begin(key, f1, 10_000, 'w1');
    await reconciles.settle(key, { ...f1, reconciles: 1, worker: 'w1' }, { verdict: 'unknown', note: 'provider has no lookup' });
    const record = await store.inspect(key);
    expect(record).toMatchObject({ status: 'running', attempts: 1, ambiguousMs: expect.any(Number) });
    expect(record!.reconciled).toMatchObject({ verdict: 'unknown', note: 'provider has no lookup' });
    expect((await store.listAmbiguous()).map((r) => r.redisKey)).toContain(record!.redisKey);
    expect(await reconciles.begin(key, f1, 10_000, 'w2')).toEqual({ kind: 'unknown', ambiguousMs: record!.ambiguousMs });
    // An operator can still settle it.
    await store.resolve(key, { attemptsSeen: 1, outcome: 'failed', error: 'checked: not sent' });
  });
});

describe('durability', () => {
  it('a verdict that starts an attempt, and a keyed re-run, throw when no replica acknowledges them', async () => {
    const { key, f1, store } = await expired();
    const durable = new ReconcileStore({ redis: fixture.client(), prefix: store.prefix, durability: { replicas: 1, timeoutMs: 50 } });
    await expect(durable.reclaimKeyed(key, { lost: f1, keyWindowMs: 60_000, leaseMs: 5_000, owner: 'w1' })).rejects.toMatchObject({
      code: 'durability.not_acknowledged',
    });
    const other = await expired();
    const begun = await durable.begin(other.key, other.f1, 10_000, 'w1');
    if (begun.kind !== 'begun') throw new Error(begun.kind);
    await expect(
      durable.settle(other.key, { ...other.f1, reconciles: begun.reconciles, worker: 'w1' }, { verdict: 'not_started', leaseMs: 5_000 }),
    ).rejects.toMatchObject({ code: 'durability.not_acknowledged' });
  });
});

describe('keyed re-run', () => {
  it('runs attempt 2 while the window is open at the end of the new lease, and refuses once it is not', async () => {
    const { store, reconciles, key, f1, f2 } = await expired();
    const created = (await store.inspect(key))!.createdMs;
    // A window that closes within the new lease: refused, nothing written.
    expect(await reconciles.reclaimKeyed(key, { lost: f1, keyWindowMs: 1_000, leaseMs: 5_000, owner: 'w1' })).toEqual({
      kind: 'windowClosed',
    });
    expect(await store.inspect(key)).toMatchObject({ attempts: 1, keyedRerunMs: null });

    const rerun = await reconciles.reclaimKeyed(key, { lost: f1, keyWindowMs: 60_000, leaseMs: 5_000, owner: 'w1', job: JOB });
    expect(rerun).toEqual({ kind: 'reclaimed', fence: f2 });
    const record = await store.inspect(key);
    expect(record).toMatchObject({ status: 'running', attempts: 2, owner: 'w1', createdMs: created });
    expect(record!.keyedRerunMs).toBe(record!.startedMs);
    // The race's loser sees the receipt moved on.
    expect(await reconciles.reclaimKeyed(key, { lost: f1, keyWindowMs: 60_000, leaseMs: 5_000, owner: 'w2' })).toEqual({ kind: 'movedOn' });
  });

  it('waits while a reconcile holds its lease', async () => {
    const { reconciles, key, f1 } = await expired();
    await reconciles.begin(key, f1, 10_000, 'w1');
    const seen = await reconciles.reclaimKeyed(key, { lost: f1, keyWindowMs: 60_000, leaseMs: 1_000, owner: 'w2' });
    expect(seen.kind).toBe('busy');
  });
});
