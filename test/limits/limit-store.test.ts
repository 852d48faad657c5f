/**
 * The limit store on a real Redis: what a window grants and refuses, when it
 * resets, reservations given back or committed, the settle of those no claim
 * took (and that a settled one can never be bound), takeovers counted once,
 * a never-started attempt's give-back, an operator's reset, scopes, corrupt
 * keys, and many connections racing for the last shares.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ToolCallReceiptKey } from '../../src/core/identity.js';
import {
  defineLimit,
  limitWindow,
  LimitStore,
  type Limit,
  type LimitDefinition,
  type LimitReservation,
  type ReserveResult,
} from '../../src/limits/index.js';
import { AuditLog } from '../../src/redis/operators/audit-log.js';
import { receiptRedisKey } from '../../src/redis/keys.js';
import { freshKey, useRedis, waitUntil } from '../support/redis-fixture.js';
import { YEAR_MS } from '../support/limit-windows.js';

const fixture = useRedis();

function limits(options: { reservationMs?: number } = {}): LimitStore {
  return new LimitStore({ redis: fixture.client(), prefix: fixture.handle().prefix, ...options });
}

const limit = (overrides: Partial<LimitDefinition> = {}): Limit =>
  defineLimit({ name: 'emails', per: 'tenant', max: 3, windowMs: YEAR_MS, ...overrides });

function granted(result: ReserveResult): LimitReservation {
  if (!result.granted) throw new Error(`expected a grant, got ${JSON.stringify(result)}`);
  return result.reservation;
}

/** Waits until `reservation`'s deadline has passed on the server clock (read through `limit`'s count for `subject`). */
async function pastDeadline(store: LimitStore, limit: Limit, subject: ToolCallReceiptKey, reservation: LimitReservation): Promise<void> {
  await waitUntil(
    () => store.usage(limit, subject),
    (u) => u.nowMs > reservation.deadlineMs,
    10_000,
    'the deadline on the server clock',
  );
}

/**
 * A share of a window of 1 whose call was claimed, past its deadline: bound to
 * the attempt, or (`bind` false) its worker died before the bind.
 */
async function overdueShare({ bind }: { bind: boolean }) {
  const store = limits({ reservationMs: 300 });
  const receipts = fixture.store();
  const key = freshKey();
  const one = limit({ max: 1 });
  const share = granted(await store.reserve(one, key));
  await receipts.claim(key, { effect: 'opaque' });
  if (bind) expect(await store.bind(share)).toEqual({ kind: 'bound' });
  await pastDeadline(store, one, key, share);
  return { store, receipts, key, one, share };
}

/** A call of the same tenant as `key` in its own run. */
const callOf = (key: ToolCallReceiptKey, n: number): ToolCallReceiptKey => ({ ...key, runId: `${key.runId}-${n}`, argsHash: `h${n}` });

describe('a window of a limit', () => {
  it('grants up to max, then refuses and says when the window resets, by the server clock', async () => {
    const store = limits();
    const key = freshKey();
    const emails = limit();
    const usedAfter: number[] = [];
    for (let i = 0; i < 3; i++) {
      await store.commit(granted(await store.reserve(emails, callOf(key, i))));
      usedAfter.push((await store.usage(emails, key)).used);
    }
    expect(usedAfter).toEqual([1, 2, 3]);
    const refused = await store.reserve(emails, callOf(key, 3));
    expect(refused).toMatchObject({ granted: false, why: 'full', usage: { used: 3, pending: 0, committed: 3, left: 0, max: 3 } });
    if (refused.granted) return;
    expect(refused.retryAtMs).toBe(refused.usage.resetsAtMs);
    expect(limitWindow(refused.usage.nowMs, YEAR_MS)).toEqual({
      startMs: refused.usage.windowStartMs,
      resetsAtMs: refused.usage.resetsAtMs,
    });
  });

  it('refused only by shares of calls not yet started: says when enough of them come back at the latest, not the reset', async () => {
    const store = limits({ reservationMs: 60_000 });
    const key = freshKey();
    const emails = limit();
    await store.commit(granted(await store.reserve(emails, callOf(key, 0))));
    const first = granted(await store.reserve(emails, callOf(key, 1)));
    const second = granted(await store.reserve(emails, callOf(key, 2)));
    const refused = await store.reserve(emails, callOf(key, 3));
    expect(refused).toMatchObject({ granted: false, why: 'held', usage: { committed: 1, pending: 2 } });
    if (refused.granted) return;
    // One share must come back: the first pending one's deadline, long before the year's reset.
    expect(refused.retryAtMs).toBe(Math.min(first.deadlineMs, second.deadlineMs));
    expect(refused.retryAtMs).toBeLessThan(refused.usage.resetsAtMs);
    // A call costing 2 needs both pending shares back: the later deadline.
    const two = await store.reserve(limit({ name: 'emails', max: 3, cost: () => 2 }), callOf(key, 4), 2);
    expect(two).toMatchObject({ granted: false, why: 'held', retryAtMs: Math.max(first.deadlineMs, second.deadlineMs) });
  });

  it("keeps no key for ever: a window's only call leaves its count and committed list expiring with the window", async () => {
    const store = limits();
    const key = freshKey();
    // A run's limit, as a one-call run meets it: nothing reserves after its commit to keep the keys.
    const perRun = limit({ name: 'lookups', per: 'run', max: 5, windowMs: 60_000 });
    expect(await store.commit(granted(await store.reserve(perRun, key)))).toBe('committed');
    const keys = store.keysOf(perRun, key);
    const redis = fixture.connect();
    expect(await redis.exists(keys.due)).toBe(0);
    for (const name of [keys.state, keys.done]) {
      const ttl = await redis.pttl(name);
      expect(ttl, name).toBeGreaterThan(60_000);
      expect(ttl, name).toBeLessThanOrEqual(3 * 60_000);
    }
  });

  it('refuses for good a call that costs more than the window holds', async () => {
    const store = limits();
    const result = await store.reserve(limit({ name: 'spend', max: 10 }), freshKey(), 11);
    expect(result).toMatchObject({ granted: false, why: 'exceeds_max', retryAtMs: null, usage: { used: 0, left: 10 } });
  });

  it('starts each window at 0 on the server clock; a reservation of an earlier window no longer counts', async () => {
    const store = limits();
    const key = freshKey();
    const quick = limit({ name: 'quick', max: 2, windowMs: 2000 });
    // Start early in a window, so the three calls below share one (they take milliseconds; the margin is 1.5 s).
    await waitUntil(
      () => store.usage(quick, key),
      (u) => u.nowMs - u.windowStartMs < 500,
      10_000,
      'the start of a window',
    );
    const first = granted(await store.reserve(quick, callOf(key, 1)));
    granted(await store.reserve(quick, callOf(key, 2)));
    const refused = await store.reserve(quick, callOf(key, 3));
    expect(refused).toMatchObject({ granted: false, why: 'full', usage: { windowStartMs: first.windowStartMs } });
    await waitUntil(
      () => store.usage(quick, key),
      (u) => u.windowStartMs > first.windowStartMs,
      10_000,
      'the next window',
    );
    const next = granted(await store.reserve(quick, callOf(key, 4)));
    expect(next.windowStartMs).toBeGreaterThanOrEqual(first.windowStartMs + 2000);
    // The first window's reservation is committed into its own window, which is over: the new one does not count it.
    expect(await store.commit(first)).toBe('committed');
    expect(await store.usage(quick, key)).toMatchObject({ committed: 0, pending: 1, used: 1 });
  });

  it('budgets: costs summing to the cap stop the call that would exceed it, and none before it', async () => {
    const store = limits();
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 60 }),
        fc.array(fc.integer({ min: 1, max: 25 }), { minLength: 1, maxLength: 12 }),
        async (max, costs) => {
          const key = freshKey();
          const spend = limit({ name: 'spend', max, cost: (args) => (args as { cents: number }).cents });
          let sum = 0;
          for (const [i, cost] of costs.entries()) {
            const result = await store.reserve(spend, callOf(key, i), cost);
            const fits = cost <= max && sum + cost <= max;
            expect({ cost, sum, granted: result.granted }).toEqual({ cost, sum, granted: fits });
            // Nothing is committed: what refuses a call that could fit is shares held by calls not yet started.
            if (!result.granted) expect(result.why).toBe(cost > max ? 'exceeds_max' : 'held');
            if (fits) sum += cost;
          }
          expect((await store.usage(spend, key)).used).toBe(sum);
        },
      ),
      { numRuns: 25 },
    );
  });
});

describe('giving back and committing', () => {
  it('a release gives the share back once; a commit counts it; a commit after the release counts nothing', async () => {
    const store = limits();
    const key = freshKey();
    const emails = limit();
    const a = granted(await store.reserve(emails, callOf(key, 1)));
    const b = granted(await store.reserve(emails, callOf(key, 2)));
    expect(await store.release(a)).toBe('pending');
    expect(await store.release(a)).toBe('unknown');
    expect(await store.commit(a)).toBe('unknown');
    expect(await store.commit(b)).toBe('committed');
    expect(await store.commit(b)).toBe('already_committed');
    expect(await store.usage(emails, key)).toMatchObject({ committed: 1, pending: 0, used: 1, left: 2 });
  });

  it('a never-started attempt gives its share back even after it was committed, and its reservation cannot be bound again', async () => {
    const store = limits();
    const receipts = fixture.store();
    const key = freshKey();
    const emails = limit();
    const a = granted(await store.reserve(emails, key));
    await receipts.claim(key, { effect: 'opaque' });
    expect(await store.bind(a)).toEqual({ kind: 'bound' });
    expect(await store.commit(a)).toBe('committed');
    expect(await store.giveBack(a)).toEqual({ wasBound: true, released: 'committed' });
    expect(await store.usage(emails, key)).toMatchObject({ used: 0, left: 3 });
    expect(await store.bind(a)).toEqual({ kind: 'revoked' });
    // The next attempt is counted by a reservation of its own.
    const b = granted(await store.reserve(emails, key));
    expect(await store.bind(b)).toEqual({ kind: 'bound' });
  });

  it('a takeover of the same receipt is counted once: a reservation committed by the first attempt, and the second’s own, given back', async () => {
    const store = limits();
    const receipts = fixture.store();
    const key = freshKey();
    const emails = limit();
    const first = granted(await store.reserve(emails, key));
    await receipts.claim(key, { effect: 'resumable' });
    expect(await store.bind(first)).toEqual({ kind: 'bound' });
    expect(await store.commit(first)).toBe('committed');
    const second = granted(await store.reserve(emails, key));
    expect(second).toMatchObject({ reused: false });
    expect(second.id).not.toBe(first.id);
    expect(await store.bind(second)).toEqual({ kind: 'counted', by: first.id });
    expect(await store.release(second)).toBe('pending');
    expect(await store.bind(second)).toEqual({ kind: 'revoked' });
    expect(await store.bind(first)).toEqual({ kind: 'bound' });
    expect(await store.usage(emails, key)).toMatchObject({ committed: 1, pending: 0 });
  });

  it('a bind sent behind a claim binds only the attempt that claim created: before it, another claim’s, or a takeover, nothing is written', async () => {
    const store = limits();
    const receipts = fixture.store();
    const emails = limit();
    const key = freshKey();
    const share = granted(await store.reserve(emails, key));
    // The bind reached Redis before its claim: no receipt yet.
    expect(await store.bind(share, 'an-epoch-not-yet-written')).toEqual({ kind: 'not_running' });
    const first = await receipts.claim(key, { effect: 'resumable', leaseMs: 100 });
    // Sent behind another claim, which did not create this attempt.
    expect(await store.bind(share, 'another-claims-epoch')).toEqual({ kind: 'not_running' });
    expect((await store.boundOn(share.receiptKey, ['emails'])).bound.size).toBe(0);
    // A takeover keeps the lifetime's epoch: attempt 2 is not the one a claim minting it created.
    await new Promise((resolve) => setTimeout(resolve, 250));
    const takeover = await receipts.claim(key, { effect: 'resumable' });
    expect(takeover.fence).toEqual({ attempt: 2, epoch: first.fence!.epoch });
    expect(await store.bind(share, first.fence!.epoch)).toEqual({ kind: 'not_running' });
    expect((await store.boundOn(share.receiptKey, ['emails'])).bound.size).toBe(0);
    // Bound once the claim's answer says which attempt runs.
    expect(await store.bind(share)).toEqual({ kind: 'bound' });

    // Behind the claim that created the attempt: bound, as a bind after it would be.
    const fresh = freshKey();
    const other = granted(await store.reserve(emails, fresh));
    const created = await receipts.claim(fresh, { effect: 'opaque' });
    expect(await store.bind(other, created.fence!.epoch)).toEqual({ kind: 'bound' });
    expect((await store.boundOn(other.receiptKey, ['emails'])).bound).toEqual(new Set(['emails']));
  });

  it('a share bound behind a claim whose reply was lost stays counted, and counts the next attempt of that call', async () => {
    const store = limits();
    const receipts = fixture.store();
    const emails = limit();
    const key = freshKey();
    const lost = granted(await store.reserve(emails, key));
    const claim = await receipts.claim(key, { effect: 'opaque' });
    expect(await store.bind(lost, claim.fence!.epoch)).toEqual({ kind: 'bound' });
    // The claim's reply never came: its attempt is released as never started, and the share settled.
    await receipts.fail(key, claim.fence!, { error: 'the reply of this claim was lost', tier: 'neverStarted' });
    expect(await store.settle(lost)).toEqual({ id: lost.id, outcome: 'committed' });
    // The redelivery's own share is given back: the lifetime is counted once.
    const again = granted(await store.reserve(emails, key));
    const next = await receipts.claim(key, { effect: 'opaque' });
    expect(next.decision.kind).toBe('execute');
    expect(await store.bind(again, next.fence!.epoch)).toEqual({ kind: 'not_running' });
    expect(await store.bind(again)).toEqual({ kind: 'counted', by: lost.id });
    expect(await store.release(again)).toBe('pending');
    expect(await store.usage(emails, key)).toMatchObject({ used: 1, pending: 0, left: 2 });
  });

  it('a redelivery of a call whose reservation is still pending reuses it: one share, however often the call is reserved', async () => {
    const store = limits();
    const receipts = fixture.store();
    const key = freshKey();
    const one = limit({ max: 1 });
    // The worker that reserved died before its claim; the redelivery reserves again, and is not refused by it.
    const dead = granted(await store.reserve(one, key));
    const again = granted(await store.reserve(one, key));
    expect(again).toMatchObject({ id: dead.id, reused: true });
    expect(again.deadlineMs).toBeGreaterThanOrEqual(dead.deadlineMs);
    expect(await store.usage(one, key)).toMatchObject({ pending: 1, used: 1 });
    // Another call is refused by it, as by any live share.
    expect(await store.reserve(one, callOf(key, 2))).toMatchObject({ granted: false, why: 'held' });
    // It pays for the attempt the redelivery starts; bound before its deadline, it is committed once.
    await receipts.claim(key, { effect: 'opaque' });
    expect(await store.bind(again)).toEqual({ kind: 'bound' });
    expect(await store.commit(again)).toBe('committed');
    expect(await store.usage(one, key)).toMatchObject({ committed: 1, pending: 0 });
    // Committed, it is the receipt's pending one no more: a later reserve of the same call makes a new one.
    const later = granted(await store.reserve(limit({ max: 2 }), key));
    expect(later).toMatchObject({ reused: false });
    expect(later.id).not.toBe(dead.id);
  });

  it('a holder that will not bind a shared reservation settles it: kept for an attempt that is bound, or running unbound; else given back', async () => {
    const store = limits();
    const receipts = fixture.store();
    const key = freshKey();
    const one = limit({ max: 1 });
    const held = granted(await store.reserve(one, key));
    const waiting = granted(await store.reserve(one, key));
    expect(waiting.id).toBe(held.id);
    // The first delivery's claim started an attempt and has not bound it yet; the second's claim waits, and settles:
    // the share stays, bound to the running attempt, committed; the first's own bind then finds it bound.
    await receipts.claim(key, { effect: 'opaque' });
    expect(await store.settle(waiting)).toEqual({ id: held.id, outcome: 'committed' });
    expect(await store.bind(held)).toEqual({ kind: 'bound' });
    expect(await store.usage(one, key)).toMatchObject({ committed: 1, pending: 0 });
    // A call with nothing running: its reservation goes back.
    const other = callOf(key, 2);
    const lone = granted(await store.reserve(limit({ max: 2 }), other));
    expect(await store.settle(lone)).toEqual({ id: lone.id, outcome: 'given_back' });
    expect(await store.bind(lone)).toEqual({ kind: 'revoked' });
  });

  it('a bind without a running attempt writes nothing', async () => {
    const store = limits();
    const key = freshKey();
    const reservation = granted(await store.reserve(limit(), key));
    expect(await store.bind(reservation)).toEqual({ kind: 'not_running' });
    const redis = fixture.connect();
    expect(await redis.exists(receiptRedisKey(fixture.handle().prefix, key), reservation.bindingsKey)).toBe(0);
  });
});

describe('against a model of one window', () => {
  type Op = { kind: 'reserve'; amount: number } | { kind: 'commit' | 'release'; pick: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant('reserve' as const), amount: fc.integer({ min: 1, max: 6 }) }),
    fc.record({ kind: fc.constantFrom('commit' as const, 'release' as const), pick: fc.nat() }),
  );

  it('every answer and the final count are what the model says, for random reserves, commits and releases', async () => {
    const store = limits();
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 15 }), fc.array(op, { minLength: 1, maxLength: 25 }), async (max, ops) => {
        const key = freshKey();
        const shares = limit({ name: 'shares', max });
        const made: { reservation: LimitReservation; state: 'pending' | 'committed' | 'gone' }[] = [];
        const sum = (state: 'pending' | 'committed') => made.filter((m) => m.state === state).reduce((n, m) => n + m.reservation.amount, 0);
        for (const [i, step] of ops.entries()) {
          if (step.kind === 'reserve') {
            const fits = step.amount <= max && sum('committed') + sum('pending') + step.amount <= max;
            const result = await store.reserve(shares, callOf(key, i), step.amount);
            expect(result.granted).toBe(fits);
            if (result.granted) made.push({ reservation: result.reservation, state: 'pending' });
            continue;
          }
          if (made.length === 0) continue;
          const target = made[step.pick % made.length]!;
          if (step.kind === 'commit') {
            const expected = { pending: 'committed', committed: 'already_committed', gone: 'unknown' }[target.state];
            expect(await store.commit(target.reservation)).toBe(expected);
            if (target.state === 'pending') target.state = 'committed';
          } else {
            const expected = target.state === 'gone' ? 'unknown' : target.state;
            expect(await store.release(target.reservation)).toBe(expected);
            target.state = 'gone';
          }
        }
        expect(await store.usage(shares, key)).toMatchObject({
          committed: sum('committed'),
          pending: sum('pending'),
          left: max - sum('committed') - sum('pending'),
        });
      }),
      { numRuns: 40 },
    );
  });
});

describe('reservations no claim took', () => {
  it('are given back by the first reserve after their deadline, and can never be bound after', async () => {
    const store = limits({ reservationMs: 300 });
    const receipts = fixture.store();
    const key = freshKey();
    const one = limit({ max: 1 });
    const lost = granted(await store.reserve(one, callOf(key, 1)));
    expect(await store.reserve(one, callOf(key, 2))).toMatchObject({
      granted: false,
      why: 'held',
      retryAtMs: lost.deadlineMs,
      settled: [],
    });
    await pastDeadline(store, one, key, lost);
    const next = await store.reserve(one, callOf(key, 2));
    expect(next).toMatchObject({ granted: true, settled: [{ id: lost.id, outcome: 'given_back' }], usage: { used: 1 } });
    // The slow claim comes at last: its attempt must not run under the revoked reservation.
    await receipts.claim(callOf(key, 1), { effect: 'opaque' });
    expect(await store.bind(lost)).toEqual({ kind: 'revoked' });
    expect(await store.commit(lost)).toBe('unknown');
    expect((await store.usage(one, key)).used).toBe(1);
  });

  it('are not counted by a read once past their deadline: overdue, out of used and left, until a reserve or settle decides them', async () => {
    const store = limits({ reservationMs: 300 });
    const key = freshKey();
    const two = limit({ max: 2 });
    await store.commit(granted(await store.reserve(two, callOf(key, 1))));
    const lost = granted(await store.reserve(two, callOf(key, 2)));
    expect(await store.usage(two, key)).toMatchObject({ committed: 1, pending: 1, overdue: 0, used: 2, left: 0 });
    const late = await waitUntil(
      () => store.usage(two, key),
      (u) => u.nowMs > lost.deadlineMs,
      10_000,
      'the deadline on the server clock',
    );
    expect(late).toMatchObject({ committed: 1, pending: 0, overdue: 1, used: 1, left: 1 });
    expect(await store.settleExpired(two, key)).toEqual([{ id: lost.id, outcome: 'given_back' }]);
    expect(await store.usage(two, key)).toMatchObject({ committed: 1, pending: 0, overdue: 0, used: 1, left: 1 });
  });

  it('once a reserve counts an overdue share of a call that runs, it answers from the window as counted, not as held', async () => {
    const { store, key, one, share: unbound } = await overdueShare({ bind: false });
    // The next call's reserve meets the overdue share, which its settle counts: the window is used up until its reset.
    const next = await store.reserve(one, callOf(key, 1));
    expect(next).toMatchObject({ granted: false, why: 'full', settled: [{ id: unbound.id, outcome: 'committed' }] });
    if (next.granted) return;
    expect(next.retryAtMs).toBe(next.usage.resetsAtMs);
  });

  it('keep their share when their call was claimed and its worker died before the bind: the settle binds it to that attempt', async () => {
    const { store, receipts, key, one, share: unbound } = await overdueShare({ bind: false });
    expect(await store.settleExpired(one, key)).toEqual([{ id: unbound.id, outcome: 'committed' }]);
    expect(await store.usage(one, key)).toMatchObject({ committed: 1, pending: 0, left: 0 });
    // The receipt's lifetime is counted by it: a takeover's own reservation is given back.
    const takeover = granted(await store.reserve(limit({ max: 2 }), key));
    expect(await store.bind(takeover)).toEqual({ kind: 'counted', by: unbound.id });
  });

  it('are committed when an attempt was bound to them, by a settle or the next reserve', async () => {
    const { store, receipts, key, one, share: bound } = await overdueShare({ bind: true });
    expect(await store.settleExpired(one, key)).toEqual([{ id: bound.id, outcome: 'committed' }]);
    expect(await store.settleExpired(one, key)).toEqual([]);
    expect(await store.reserve(one, callOf(key, 2))).toMatchObject({ granted: false, why: 'full', usage: { committed: 1, pending: 0 } });
  });
});

describe('operators', () => {
  it('a reset forgets what was used, keeps what is pending, and is recorded in the audit log', async () => {
    const store = limits();
    const key = freshKey();
    const emails = limit();
    const a = granted(await store.reserve(emails, callOf(key, 1)));
    const b = granted(await store.reserve(emails, callOf(key, 2)));
    granted(await store.reserve(emails, callOf(key, 3)));
    await store.commit(a);
    await store.commit(b);
    const reset = await store.reset(emails, key, { actor: 'ops@example.com', source: 'cli' });
    expect(reset).toMatchObject({ usedBefore: 2, usage: { committed: 0, pending: 1, used: 1, left: 2 } });
    expect(await store.usage(emails, key)).toMatchObject({ committed: 0, pending: 1, resetAtMs: reset.usage.nowMs });
    // A share the reset forgot cannot be given back a second time.
    expect(await store.release(a)).toBe('unknown');
    expect((await store.usage(emails, key)).used).toBe(1);
    const [entry] = await new AuditLog(fixture.client(), fixture.handle().prefix).read({ count: 1 });
    expect(entry).toMatchObject({
      id: reset.auditId,
      actor: 'ops@example.com',
      source: 'cli',
      action: 'limit-reset',
      receipts: [],
      detail: { limit: 'emails', per: 'tenant', tenantId: key.tenantId, usedBefore: 2, windowStartMs: reset.usage.windowStartMs },
    });
  });
});

describe('scopes and keys', () => {
  it('a tenant limit counts across its runs, a run limit per run, a global limit across tenants', async () => {
    const store = limits();
    const key = freshKey();
    const other = freshKey();
    const perTenant = limit({ name: 'per-tenant', max: 2 });
    const perRun = limit({ name: 'per-run', per: 'run', max: 1 });
    const everyone = limit({ name: `everyone-${key.argsHash}`, per: 'global', max: 2 });
    expect((await store.reserve(perTenant, callOf(key, 1))).granted).toBe(true);
    expect((await store.reserve(perTenant, callOf(key, 2))).granted).toBe(true);
    expect((await store.reserve(perTenant, callOf(key, 3))).granted).toBe(false);
    expect((await store.reserve(perTenant, other)).granted).toBe(true);
    expect((await store.reserve(perRun, key)).granted).toBe(true);
    expect((await store.reserve(perRun, { ...key, argsHash: 'other' })).granted).toBe(false);
    expect((await store.reserve(perRun, callOf(key, 1))).granted).toBe(true);
    expect((await store.reserve(everyone, key)).granted).toBe(true);
    expect((await store.reserve(everyone, other)).granted).toBe(true);
    expect((await store.reserve(everyone, callOf(other, 1))).granted).toBe(false);
  });

  it('refuses a subject the scope needs, and an amount that is not a whole number of at least 1', async () => {
    const store = limits();
    await expect(store.usage(limit({ per: 'run' }), { tenantId: 'acme' })).rejects.toMatchObject({
      code: 'receipt.invalid_input',
      message: expect.stringContaining('runId'),
    });
    for (const amount of [0, -1, 1.5, Number.NaN])
      await expect(store.reserve(limit(), freshKey(), amount)).rejects.toMatchObject({ code: 'receipt.invalid_input' });
  });

  it('a limit key of the wrong type is corrupt: the reserve writes nothing', async () => {
    const store = limits();
    const key = freshKey();
    const emails = limit();
    const keys = store.keysOf(emails, key);
    const redis = fixture.connect();
    await redis.set(keys.state, 'x');
    await expect(store.reserve(emails, key)).rejects.toMatchObject({ code: 'receipt.corrupt', redisKey: keys.state });
    await redis.del(keys.state);
    await redis.hset(keys.state, 'used', 'lots');
    await expect(store.usage(emails, key)).rejects.toMatchObject({
      code: 'receipt.corrupt',
      message: expect.stringContaining('used is not a whole number'),
    });
    expect(await redis.exists(keys.due, keys.done)).toBe(0);
  });
});

describe('many clients at once', () => {
  it('never grant more than max: 200 reserves from 10 connections for 37 shares', async () => {
    const stores = Array.from({ length: 10 }, () => limits());
    const key = freshKey();
    const shares = limit({ max: 37 });
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => stores[i % 10]!.reserve(shares, callOf(key, i))));
    expect(results.filter((r) => r.granted)).toHaveLength(37);
    expect(await stores[0]!.usage(shares, key)).toMatchObject({ pending: 37, left: 0 });
  });
});
