/**
 * A limit's share across the attempts of one call, through `LimitedCall` on a
 * real Redis: a takeover that reused the share its earlier attempt bound
 * keeps it counted even if the takeover never starts, and the give-back of
 * an attempt that never started changes nothing once a later attempt took
 * the call over, or when the share was bound for an earlier attempt. Either
 * way the execution that may have run stays counted, and the window admits
 * no call more than its max. And a bind answered after the run's bindings
 * could have expired runs nothing. An attempt its limits do not let run
 * gives its shares back only after its receipt says it never started.
 */
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import type { ToolCallReceiptKey } from '../../src/core/identity.js';
import {
  defineLimit,
  LimitedCall,
  LimitStore,
  type LimitRefusal,
  type LimitReservation,
  type ReserveResult,
} from '../../src/limits/index.js';
import { receiptRedisKey } from '../../src/redis/keys.js';
import type { AttemptFence } from '../../src/redis/errors.js';
import type { ReceiptStore } from '../../src/redis/receipts/store.js';
import { YEAR_MS } from '../support/limit-windows.js';
import { freshKey, useRedis, waitForLeaseExpiry, waitUntil } from '../support/redis-fixture.js';

const fixture = useRedis();

function granted(result: ReserveResult): LimitReservation {
  if (!result.granted) throw new Error(`expected a grant, got ${JSON.stringify(result)}`);
  return result.reservation;
}

/** An attempt ends as never started, as the wrapper ends it: its receipt settled so, then its call's shares. */
async function endNeverStarted(receipts: ReceiptStore, key: ToolCallReceiptKey, fence: AttemptFence, call: LimitedCall, why: string) {
  await receipts.fail(key, fence, { error: why, tier: 'neverStarted' });
  await call.neverStarted();
  await call.settled();
}

/** Another call of `key`'s tenant, in a run of its own. */
const otherCall = (key: ToolCallReceiptKey): ToolCallReceiptKey => ({ ...key, runId: `${key.runId}-other`, argsHash: 'other' });

describe("a limit's share across the attempts of one call", () => {
  it.each(['sliding', 'bucket'] as const)(
    'a takeover that reused the share its first attempt bound, and never started, leaves it counted (%s)',
    async (kind) => {
      const store = new LimitStore({ redis: fixture.client(), prefix: fixture.handle().prefix });
      const receipts = fixture.store();
      const one = defineLimit(
        kind === 'bucket'
          ? { name: 'emails', per: 'tenant', max: 1, windowMs: YEAR_MS, kind, burst: 1 }
          : { name: 'emails', per: 'tenant', max: 1, windowMs: YEAR_MS, kind },
      );
      const key = freshKey();
      const receiptKey = receiptRedisKey(fixture.handle().prefix, key);

      // Delivery 1: its attempt runs under the share (pending until the attempt ends), and its worker dies.
      const first = granted(await store.reserve(one, key));
      const claimed = await receipts.claim(key, { effect: 'resumable', leaseMs: 300 });
      expect(await new LimitedCall(store, receiptKey, [first], undefined, []).afterClaim(true, claimed.fence)).toEqual({ run: true });
      await waitForLeaseExpiry(receipts, key);

      // Delivery 2 reuses the pending share and takes the attempt over; its attempt never starts.
      const again = granted(await store.reserve(one, key));
      expect(again).toMatchObject({ id: first.id, reused: true });
      const takeover = await receipts.claim(key, { effect: 'resumable', leaseMs: 60_000 });
      expect(takeover.decision).toEqual({ kind: 'execute', attempt: 2 });
      expect(await store.bind(again)).toEqual({ kind: 'counted', by: first.id });
      const second = new LimitedCall(store, receiptKey, [again], undefined, []);
      expect(await second.afterClaim(true, takeover.fence)).toEqual({ run: true });
      await endNeverStarted(receipts, key, takeover.fence!, second, 'the mail server said no');

      // The first attempt's execution is still counted: the window of 1 is full.
      expect(await store.usage(one, key)).toMatchObject({ used: 1, pending: 0, left: 0 });
      expect(await store.reserve(one, otherCall(key))).toMatchObject({ granted: false });
    },
  );

  it("a bind by the attempt it was bound for answers bound, and that attempt's give-back takes it back", async () => {
    const store = new LimitStore({ redis: fixture.client(), prefix: fixture.handle().prefix });
    const receipts = fixture.store();
    const one = defineLimit({ name: 'emails', per: 'tenant', max: 1, windowMs: YEAR_MS, kind: 'sliding' });
    const key = freshKey();
    const receiptKey = receiptRedisKey(fixture.handle().prefix, key);
    const share = granted(await store.reserve(one, key));
    const claimed = await receipts.claim(key, { effect: 'opaque' });
    // A delivery waiting for this attempt settles the shared share: bound to the running attempt.
    expect(await store.settle(share)).toEqual({ id: share.id, outcome: 'committed' });
    const call = new LimitedCall(store, receiptKey, [share], undefined, []);
    expect(await call.afterClaim(true, claimed.fence)).toEqual({ run: true });
    await endNeverStarted(receipts, key, claimed.fence!, call, 'refused before sending');
    expect(await store.usage(one, key)).toMatchObject({ used: 0, pending: 0, left: 1 });
  });

  it('a takeover that another limit refuses gives back none of the shares its earlier attempt was bound to', async () => {
    const store = new LimitStore({ redis: fixture.client(), prefix: fixture.handle().prefix });
    const receipts = fixture.store();
    const emails = defineLimit({ name: 'emails', per: 'tenant', max: 1, windowMs: YEAR_MS, kind: 'sliding' });
    const sends = defineLimit({ name: 'sends', per: 'tenant', max: 1, windowMs: YEAR_MS, kind: 'sliding' });
    const key = freshKey();
    const receiptKey = receiptRedisKey(fixture.handle().prefix, key);

    // Attempt 1 was bound to its emails share, and its worker died before the sends bind landed.
    const first = granted(await store.reserve(emails, key));
    const claimed = await receipts.claim(key, { effect: 'resumable', leaseMs: 300 });
    expect(await store.bind(first)).toEqual({ kind: 'bound' });
    // Meanwhile another call took the one sends share.
    granted(await store.reserve(sends, otherCall(key)));
    await waitForLeaseExpiry(receipts, key);

    // The takeover reuses the emails share; sends refuses it, and its lifetime is not counted by sends: not run.
    const again = granted(await store.reserve(emails, key));
    expect(again).toMatchObject({ id: first.id, reused: true });
    const refusal: LimitRefusal = { onLimit: 'refuse', limit: 'sends', text: 'full', retryAtMs: 0, nowMs: 0 };
    const takeover = await receipts.claim(key, { effect: 'resumable', leaseMs: 60_000 });
    expect(takeover.decision).toEqual({ kind: 'execute', attempt: 2 });
    const call = new LimitedCall(store, receiptKey, [again], refusal, ['sends']);
    expect(await call.afterClaim(true, takeover.fence)).toMatchObject({ run: false });
    await endNeverStarted(receipts, key, takeover.fence!, call, 'sends is full');

    // Attempt 1 may have run: its emails share is still held, and the window of 1 stays full.
    expect(claimed.decision).toEqual({ kind: 'execute', attempt: 1 });
    expect(await store.usage(emails, key)).toMatchObject({ pending: 1, left: 0 });
    expect(await store.reserve(emails, otherCall(key))).toMatchObject({ granted: false });
  });

  it("an attempt a limit refuses after its claim keeps the others' shares until its receipt is settled as never started", async () => {
    const store = new LimitStore({ redis: fixture.client(), prefix: fixture.handle().prefix });
    const receipts = fixture.store();
    const spare = defineLimit({ name: 'spare', per: 'tenant', max: 5, windowMs: YEAR_MS, kind: 'sliding' });
    const sends = defineLimit({ name: 'sends', per: 'tenant', max: 1, windowMs: YEAR_MS, kind: 'sliding' });
    const key = freshKey();
    const receiptKey = receiptRedisKey(fixture.handle().prefix, key);

    // Attempt 1 ran under no limit and died; sends is full meanwhile, so its takeover is refused after its claim.
    await receipts.claim(key, { effect: 'resumable', leaseMs: 300 });
    granted(await store.reserve(sends, otherCall(key)));
    await waitForLeaseExpiry(receipts, key);
    const share = granted(await store.reserve(spare, key));
    const refusal: LimitRefusal = { onLimit: 'refuse', limit: 'sends', text: 'full', retryAtMs: 0, nowMs: 0 };
    const takeover = await receipts.claim(key, { effect: 'resumable', leaseMs: 60_000 });
    const call = new LimitedCall(store, receiptKey, [share], refusal, ['sends']);
    expect(await call.afterClaim(true, takeover.fence)).toMatchObject({ run: false });

    // Its receipt still says running: a worker that died here would leave that attempt counted by its spare share.
    expect(await store.usage(spare, key)).toMatchObject({ pending: 1 });
    await endNeverStarted(receipts, key, takeover.fence!, call, 'sends is full');
    expect(await store.usage(spare, key)).toMatchObject({ used: 0, pending: 0, left: 5 });
  });

  it('runs nothing under a bind answered after the bindings could have expired: a revocation may be gone by then', async () => {
    const reservationMs = 200;
    const store = new LimitStore({ redis: fixture.client(), prefix: fixture.handle().prefix, reservationMs });
    const receipts = fixture.store();
    const quick = defineLimit({ name: 'emails', per: 'tenant', max: 1, windowMs: 200, kind: 'sliding' });
    const key = freshKey();
    const receiptKey = receiptRedisKey(fixture.handle().prefix, key);
    const reservedAtMs = performance.now();
    const share = granted(await store.reserve(quick, key));
    // The process pauses before its claim: past the deadline a settle gives the share back (revoked on the run's
    // side), and the run's bindings, with the revocation, expire before the claim comes.
    await waitUntil(
      () => store.usage(quick, key),
      (u) => u.nowMs > share.deadlineMs,
      10_000,
      'the deadline',
    );
    expect(await store.settle(share)).toEqual({ id: share.id, outcome: 'given_back' });
    const redis = fixture.connect();
    await waitUntil(
      () => redis.exists(share.bindingsKey),
      (n) => n === 0,
      10_000,
      'the bindings to expire',
    );
    const claimed = await receipts.claim(key, { effect: 'opaque' });
    const call = new LimitedCall(store, receiptKey, [share], undefined, [], reservedAtMs);
    expect(await call.afterClaim(true, claimed.fence)).toEqual({ run: false, revoked: true });
    await endNeverStarted(receipts, key, claimed.fence!, call, 'its reservation was revoked');
    // Nothing is left bound on the receipt, and the window counts nothing for it.
    expect((await store.boundOn(receiptKey, ['emails'])).bound.size).toBe(0);
    expect(await store.usage(quick, key)).toMatchObject({ used: 0, pending: 0 });
  });

  it('a give-back after a later attempt took the failed one over changes nothing: that attempt is counted by the share', async () => {
    const store = new LimitStore({ redis: fixture.client(), prefix: fixture.handle().prefix });
    const receipts = fixture.store();
    const one = defineLimit({ name: 'emails', per: 'tenant', max: 1, windowMs: YEAR_MS });
    const key = freshKey();
    const receiptKey = receiptRedisKey(fixture.handle().prefix, key);

    // Delivery 1: bound and committed (a fixed window counts at the bind); its tool never starts, and it settles so.
    const share = granted(await store.reserve(one, key));
    const claimed = await receipts.claim(key, { effect: 'opaque' });
    const first = new LimitedCall(store, receiptKey, [share], undefined, []);
    expect(await first.afterClaim(true, claimed.fence)).toEqual({ run: true });
    await receipts.fail(key, claimed.fence!, { error: 'refused before sending', tier: 'neverStarted' });

    // Before delivery 1 gives its share back, delivery 2 claims the failed call again: the window is full, but the
    // call's lifetime is counted by that share, so it runs.
    const refused = await store.reserve(one, key);
    expect(refused).toMatchObject({ granted: false });
    const refusal: LimitRefusal = { onLimit: 'refuse', limit: 'emails', text: 'full', retryAtMs: 0, nowMs: 0 };
    const retaken = await receipts.claim(key, { effect: 'opaque' });
    expect(retaken.decision).toEqual({ kind: 'execute', attempt: 2 });
    expect(await new LimitedCall(store, receiptKey, [], refusal, ['emails']).afterClaim(true, retaken.fence)).toEqual({ run: true });

    // Delivery 1's give-back comes late: the receipt moved on, and the share stays counted for attempt 2.
    await first.neverStarted();
    expect(await store.giveBack(share, claimed.fence)).toEqual({ wasBound: true, released: 'kept' });
    expect(await store.usage(one, key)).toMatchObject({ used: 1, left: 0 });
    expect(await store.reserve(one, otherCall(key))).toMatchObject({ granted: false });
  });
});
