/**
 * The two windows that do not reset all at once, through the limit store on
 * a real Redis and its clock: a sliding window counts what was committed in
 * its last `windowMs` (and a pending share as taken now), a token bucket
 * grants its burst and then one unit every `windowMs / max`; each says when
 * a refused call may fit, a pending share given back frees its unit, and a
 * change of kind starts a new count; random reserves, commits and releases
 * answer as a model of each kind says.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ToolCallReceiptKey } from '../../src/core/identity.js';
import {
  defineLimit,
  LimitStore,
  listLimitCounts,
  type LimitDefinition,
  type LimitReservation,
  type ReserveResult,
} from '../../src/limits/index.js';
import { freshKey, useRedis, waitUntil } from '../support/redis-fixture.js';
import { YEAR_MS } from '../support/limit-windows.js';

const fixture = useRedis();

function limits(): LimitStore {
  return new LimitStore({ redis: fixture.client(), prefix: fixture.handle().prefix, reservationMs: 60_000 });
}

function granted(result: ReserveResult): LimitReservation {
  if (!result.granted) throw new Error(`expected a grant, got ${JSON.stringify(result)}`);
  return result.reservation;
}

/** A refusal of a call that may fit later: when (`retryAtMs`) is known. */
function refused(result: ReserveResult): Extract<ReserveResult, { granted: false }> & { retryAtMs: number } {
  if (result.granted || result.retryAtMs === null) throw new Error(`expected a refusal with a time, got ${JSON.stringify(result)}`);
  return { ...result, retryAtMs: result.retryAtMs };
}

/** A call of the same tenant as `key` in its own run. */
const callOf = (key: ToolCallReceiptKey, n: number): ToolCallReceiptKey => ({ ...key, runId: `${key.runId}-${n}`, argsHash: `h${n}` });

/** Commits `reservation` between two reads of the server clock: its stamp is within them. */
async function commitBetween(store: LimitStore, reservation: LimitReservation, key: ToolCallReceiptKey, limit: LimitDefinition) {
  const before = (await store.usage(defineLimit(limit), key)).nowMs;
  expect(await store.commit(reservation)).toBe('committed');
  const after = (await store.usage(defineLimit(limit), key)).nowMs;
  return { before, after };
}

describe('a sliding window', () => {
  const definition: LimitDefinition = { name: 'calls', per: 'tenant', max: 2, windowMs: 2000, kind: 'sliding' };
  const calls = defineLimit(definition);

  it('counts what was committed in its last windowMs, and a pending share as taken now', async () => {
    const store = limits();
    const key = freshKey();
    const first = granted(await store.reserve(calls, callOf(key, 0)));
    expect(await store.usage(calls, key)).toMatchObject({ kind: 'sliding', pending: 1, committed: 0, left: 1, nextFreeAtMs: null });
    const a = await commitBetween(store, first, key, definition);
    // The second a good while later, so that the first leaves the window well before it.
    await waitUntil(
      () => store.usage(calls, key),
      (u) => u.nowMs >= a.after + 800,
      10_000,
      'a later moment',
    );
    const b = await commitBetween(store, granted(await store.reserve(calls, callOf(key, 1))), key, definition);

    // Full: the call may fit when the first committed share leaves the window, windowMs after its commit.
    const over = refused(await store.reserve(calls, callOf(key, 2)));
    expect(over.why).toBe('full');
    expect(over.retryAtMs).toBeGreaterThanOrEqual(a.before + 2000);
    expect(over.retryAtMs).toBeLessThanOrEqual(a.after + 2000);
    const usage = await store.usage(calls, key);
    expect(usage).toMatchObject({ committed: 2, used: 2, left: 0, nextFreeAtMs: over.retryAtMs });
    expect(usage.resetsAtMs).toBeGreaterThanOrEqual(b.before + 2000);
    expect(usage.resetsAtMs).toBeLessThanOrEqual(b.after + 2000);

    // Not a moment before: a call then finds it full still; then the second share is still in the window.
    expect(refused(await store.reserve(calls, callOf(key, 2))).retryAtMs).toBe(over.retryAtMs);
    await waitUntil(
      () => store.usage(calls, key),
      (u) => u.nowMs >= over.retryAtMs,
      10_000,
      'the first share to leave',
    );
    const third = granted(await store.reserve(calls, callOf(key, 2)));
    // Full again: the second share leaves the window before the pending one's deadline (a minute) could free it.
    const still = refused(await store.reserve(calls, callOf(key, 3)));
    expect(still).toMatchObject({ why: 'full', retryAtMs: usage.resetsAtMs });
    // A pending share given back frees its unit at once.
    expect(await store.release(third)).toBe('pending');
    granted(await store.reserve(calls, callOf(key, 3)));
  });

  it('gives a committed share back (its call never started), and refuses a call larger than max', async () => {
    const store = limits();
    const key = freshKey();
    const shares = [granted(await store.reserve(calls, callOf(key, 0))), granted(await store.reserve(calls, callOf(key, 1)))];
    for (const share of shares) expect(await store.commit(share)).toBe('committed');
    refused(await store.reserve(calls, callOf(key, 2)));
    expect(await store.release(shares[0]!)).toBe('committed');
    expect(await store.usage(calls, key)).toMatchObject({ committed: 1, left: 1 });
    granted(await store.reserve(calls, callOf(key, 2)));
    expect(await store.reserve(calls, callOf(key, 3), 3)).toMatchObject({ granted: false, why: 'exceeds_max', retryAtMs: null });
  });
});

describe('a token bucket', () => {
  // One unit every 1000 ms, up to 3 at once.
  const definition: LimitDefinition = { name: 'calls', per: 'tenant', max: 2, windowMs: 2000, kind: 'bucket', burst: 3 };
  const calls = defineLimit(definition);

  it('grants its burst at once, then one unit every windowMs / max, and says when', async () => {
    const store = limits();
    const key = freshKey();
    expect(await store.usage(calls, key)).toMatchObject({ kind: 'bucket', capacity: 3, used: 0, left: 3, nextFreeAtMs: null });
    const stamps = [];
    for (let i = 0; i < 3; i++)
      stamps.push(await commitBetween(store, granted(await store.reserve(calls, callOf(key, i))), key, definition));
    const over = refused(await store.reserve(calls, callOf(key, 3)));
    expect(over.why).toBe('full');
    // Three units paid back from the first commit on, at 1000 ms each; one must be: 1000 ms after the first.
    expect(over.retryAtMs).toBeGreaterThanOrEqual(stamps[0]!.before + 1000);
    expect(over.retryAtMs).toBeLessThanOrEqual(stamps[2]!.after + 1000);
    const usage = await store.usage(calls, key);
    expect(usage).toMatchObject({ committed: 3, used: 3, left: 0, nextFreeAtMs: over.retryAtMs });
    expect(usage.resetsAtMs).toBeGreaterThanOrEqual(stamps[0]!.before + 3000);

    await waitUntil(
      () => store.usage(calls, key),
      (u) => u.nowMs >= over.retryAtMs,
      10_000,
      'the next unit',
    );
    const next = granted(await store.reserve(calls, callOf(key, 3)));
    const again = refused(await store.reserve(calls, callOf(key, 4)));
    // The next one is a whole unit later (the share just granted counts as taken now).
    expect(again.retryAtMs).toBeGreaterThanOrEqual(over.retryAtMs + 1000 - 1);
    // A pending share given back is a unit back; a committed one is not (a bucket never takes back what it paid out).
    expect(await store.release(next)).toBe('pending');
    const retaken = granted(await store.reserve(calls, callOf(key, 4)));
    expect(await store.commit(retaken)).toBe('committed');
    expect(await store.release(retaken)).toBe('committed');
    expect(refused(await store.reserve(calls, callOf(key, 5))).why).toBe('full');
    expect(await store.reserve(calls, callOf(key, 6), 4)).toMatchObject({ granted: false, why: 'exceeds_max', retryAtMs: null });
  });

  it('is full again after an operator reset, and a change of kind starts a new count', async () => {
    const store = limits();
    const key = freshKey();
    for (let i = 0; i < 3; i++) await store.commit(granted(await store.reserve(calls, callOf(key, i))));
    refused(await store.reserve(calls, callOf(key, 3)));
    const { usedBefore, usage } = await store.reset(calls, key, { actor: 'test', source: 'test' });
    expect(usedBefore).toBe(3);
    expect(usage).toMatchObject({ used: 0, left: 3 });
    granted(await store.reserve(calls, callOf(key, 3)));

    const fixed = defineLimit({ ...definition, kind: 'fixed', burst: undefined, windowMs: YEAR_MS });
    await store.commit(granted(await store.reserve(fixed, callOf(key, 4))));
    expect(await store.usage(fixed, key)).toMatchObject({ kind: 'fixed', committed: 1, left: 1 });
    const sliding = defineLimit({ ...definition, kind: 'sliding', burst: undefined });
    expect(await store.usage(sliding, key)).toMatchObject({ kind: 'sliding', committed: 0, left: 2 });
  });
});

describe('pending shares of a sliding window or a bucket', () => {
  it('are never said to be of calls not started: a call they alone keep out may fit when one of them ends', async () => {
    const store = limits();
    const key = freshKey();
    // Five at once, then one unit every 2 s; and 3 in any 60 s.
    const bucket = defineLimit({ name: 'summaries', per: 'tenant', max: 5, windowMs: 10_000, kind: 'bucket', burst: 5 });
    const sliding = defineLimit({ name: 'searches', per: 'tenant', max: 3, windowMs: 60_000, kind: 'sliding' });
    for (let i = 0; i < 5; i++) granted(await store.reserve(bucket, callOf(key, i)));
    for (let i = 0; i < 3; i++) granted(await store.reserve(sliding, callOf(key, 10 + i)));
    // Their calls are running: each share is committed when its call ends, not given back at its deadline.
    const sixth = refused(await store.reserve(bucket, callOf(key, 5)));
    expect(sixth.why).toBe('full');
    expect(sixth.retryAtMs - sixth.usage.nowMs).toBe(2000);
    // A unit that pays back in 10 ms: asked again in a second, not at once, while the calls run on.
    const fast = defineLimit({ name: 'fast', per: 'tenant', max: 100, windowMs: 1000, kind: 'bucket', burst: 2 });
    for (let i = 0; i < 2; i++) granted(await store.reserve(fast, callOf(key, 20 + i)));
    const third = refused(await store.reserve(fast, callOf(key, 22)));
    expect(third.retryAtMs - third.usage.nowMs).toBe(1000);
    const fourth = refused(await store.reserve(sliding, callOf(key, 13)));
    expect(fourth.why).toBe('full');
    // Before a window passes only the deadline of a share whose call never ran can make room (60 s reservations).
    expect(fourth.retryAtMs - fourth.usage.nowMs).toBeLessThanOrEqual(60_000);
  });
});

describe('a share bound to an attempt that runs long', () => {
  it("is committed by a settle after its run's bindings have expired: the receipt still names it", async () => {
    // A 100 ms sliding window and 300 ms reservations: the run's bindings are kept 500 ms after their last write.
    const store = new LimitStore({ redis: fixture.client(), prefix: fixture.handle().prefix, reservationMs: 300 });
    const receipts = fixture.store();
    const sliding = defineLimit({ name: 'long', per: 'tenant', max: 40, windowMs: 100, kind: 'sliding' });
    const key = freshKey();
    const share = granted(await store.reserve(sliding, key));
    await receipts.claim(key, { effect: 'opaque' });
    expect(await store.bind(share)).toEqual({ kind: 'bound' });
    // Other calls of the tenant, whose commits keep the count's keys while nobody reserves (and settles).
    const others: LimitReservation[] = [];
    for (let i = 1; i <= 30; i++) others.push(granted(await store.reserve(sliding, callOf(key, i))));
    // The tool runs on: its share stays pending (committed when it ends); the bindings hash expires meanwhile.
    const redis = fixture.connect();
    await waitUntil(
      async () => {
        const next = others.shift();
        if (next !== undefined) await store.commit(next);
        return redis.exists(share.bindingsKey);
      },
      (n) => n === 0,
      10_000,
      'the bindings hash to expire',
    );
    expect(await store.settleExpired(sliding, key)).toContainEqual({ id: share.id, outcome: 'committed' });
  });
});

describe('the index of counts', () => {
  it('lists a bucket for as long as its committed units hold it, beyond what its reserves said', async () => {
    const redis = fixture.connect();
    const store = new LimitStore({ redis: fixture.client(), prefix: fixture.handle().prefix, reservationMs: 300 });
    // One unit a second, five at once: five committed at once hold the bucket about 5 s.
    const bucket = defineLimit({ name: 'bk', per: 'tenant', max: 1, windowMs: 1000, kind: 'bucket', burst: 5 });
    const other = defineLimit({ name: 'other', per: 'tenant', max: 100, windowMs: 1000 });
    const key = freshKey();
    for (let i = 0; i < 5; i++) expect(await store.commit(granted(await store.reserve(bucket, callOf(key, i))))).toBe('committed');
    // Past what each reserve listed it for (its deadline and a window), another count's reserve prunes the index.
    const reservedUntil = (await store.usage(bucket, key)).nowMs + 1300;
    await waitUntil(
      () => store.usage(bucket, key),
      (u) => u.nowMs > reservedUntil,
      10_000,
      'the reserves’ listing to pass',
    );
    await store.reserve(other, freshKey());
    const usage = await store.usage(bucket, key);
    expect(usage.used).toBeGreaterThan(0);
    expect((await listLimitCounts(store, redis)).map((c) => c.name)).toContain('bk');
  });
});

describe('each kind against its model', () => {
  type Op = { kind: 'reserve'; amount: number } | { kind: 'commit' | 'release'; pick: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant('reserve' as const), amount: fc.integer({ min: 1, max: 6 }) }),
    fc.record({ kind: fc.constantFrom('commit' as const, 'release' as const), pick: fc.nat() }),
  );

  it.each(['sliding', 'bucket'] as const)(
    '%s: every answer and the final count are what the model says, for random reserves, commits and releases',
    async (kind) => {
      const store = limits();
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 15 }), fc.array(op, { minLength: 1, maxLength: 25 }), async (cap, ops) => {
          const key = freshKey();
          // A bucket of `cap` at once, refilling one unit a year; a sliding window of `cap` a year: so long that nothing
          // leaves the window, and the bucket refills nothing, while a case runs.
          const shares = defineLimit(
            kind === 'bucket'
              ? { name: 'shares', per: 'tenant', max: 1, windowMs: YEAR_MS, kind, burst: cap }
              : { name: 'shares', per: 'tenant', max: cap, windowMs: YEAR_MS, kind },
          );
          const made: { reservation: LimitReservation; state: 'pending' | 'committed' | 'gone' }[] = [];
          // What a bucket paid out stays paid (a committed share given back is not returned to it).
          let paidOut = 0;
          const sum = (state: 'pending' | 'committed') =>
            made.filter((m) => m.state === state).reduce((n, m) => n + m.reservation.amount, 0);
          const committed = () => (kind === 'bucket' ? paidOut : sum('committed'));
          for (const [i, step] of ops.entries()) {
            if (step.kind === 'reserve') {
              const fits = step.amount <= cap && committed() + sum('pending') + step.amount <= cap;
              const result = await store.reserve(shares, callOf(key, i), step.amount);
              expect(result.granted).toBe(fits);
              if (result.granted) made.push({ reservation: result.reservation, state: 'pending' });
              // Never 'held': these kinds' pending shares may be of calls running (committed when they end).
              else expect(result.why).toBe(step.amount > cap ? 'exceeds_max' : 'full');
              continue;
            }
            if (made.length === 0) continue;
            const target = made[step.pick % made.length]!;
            if (step.kind === 'commit') {
              const expected = { pending: 'committed', committed: 'already_committed', gone: 'unknown' }[target.state];
              expect(await store.commit(target.reservation)).toBe(expected);
              if (target.state === 'pending') {
                target.state = 'committed';
                paidOut += target.reservation.amount;
              }
            } else {
              const expected = target.state === 'gone' ? 'unknown' : target.state;
              expect(await store.release(target.reservation)).toBe(expected);
              target.state = 'gone';
            }
          }
          expect(await store.usage(shares, key)).toMatchObject({
            kind,
            capacity: cap,
            committed: committed(),
            pending: sum('pending'),
            left: cap - committed() - sum('pending'),
          });
        }),
        { numRuns: 30 },
      );
    },
    120_000,
  );
});
