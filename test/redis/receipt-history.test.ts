/**
 * A receipt's audit trail (`hist:<n>`, `hist_seq`): every operator verdict,
 * reconcile verdict and late settle is appended by the script that makes the
 * transition, survives later attempts, is capped, and reads back through the
 * store and the reader. Against a real Redis.
 */
import { describe, expect, it } from 'vitest';
import { FencedOutError, InvalidReceiptInputError } from '../../src/redis/errors.js';
import { RECEIPT_HISTORY_CAP } from '../../src/redis/receipts/reads/record.js';
import { ReceiptReader } from '../../src/redis/receipts/reads/inspect.js';
import { ReconcileStore } from '../../src/redis/receipts/transitions/reconcile-store.js';
import type { ReceiptStore } from '../../src/redis/receipts/store.js';
import type { ToolCallReceiptKey } from '../../src/core/identity.js';
import { freshKey, useRedis, waitForLeaseExpiry } from '../support/redis-fixture.js';

const fixture = useRedis();

/** Claims the call's next opaque attempt with a short lease, lets it lapse and flags it; returns its fence. */
async function ambiguousAttempt(store: ReceiptStore, key: ToolCallReceiptKey) {
  const claimed = await store.claim(key, { effect: 'opaque', leaseMs: 40 });
  if (claimed.decision.kind !== 'execute') throw new Error(`expected execute, got ${claimed.decision.kind}`);
  await waitForLeaseExpiry(store, key);
  expect((await store.claim(key, { effect: 'opaque' })).decision.kind).toBe('ambiguous');
  return claimed.fence!;
}

describe('receipt history', () => {
  it("keeps an operator's verdict (who, when, what, attempt, note) across the attempts that follow it", async () => {
    const store = fixture.store();
    const key = freshKey();
    const f1 = await ambiguousAttempt(store, key);
    await store.resolve(key, {
      attemptsSeen: 1,
      epochSeen: f1.epoch,
      outcome: 'failed',
      error: 'no email in the outbox',
      by: 'alice',
      note: 'checked SES',
    });
    const resolved = (await store.inspect(key))!;
    expect(resolved.history).toEqual([
      {
        seq: 1,
        atMs: resolved.resolvedMs,
        what: 'resolve.failed',
        by: 'alice',
        attempt: 1,
        note: 'checked SES',
        error: 'no email in the outbox',
        ambiguousMs: resolved.ambiguousMs,
        refused: false,
      },
    ]);

    // The call runs again as attempt 2, and completes: the verdict fields of attempt 1 are cleared, the trail is not.
    const again = await store.claim(key, { effect: 'opaque' });
    expect(again.decision.kind).toBe('execute');
    await store.complete(key, again.fence!, 'sent');
    const after = (await store.inspect(key))!;
    expect(after).toMatchObject({ attempts: 2, status: 'completed', resolvedMs: null, ambiguousMs: null });
    expect(after.history).toEqual(resolved.history);
    expect(await store.history(key)).toEqual(resolved.history);
    expect(await new ReceiptReader(fixture.client(), store.prefix).history(store.redisKey(key))).toEqual(resolved.history);
  });

  it("records a late settle, and a settle refused after an operator's verdict, with the attempt's owner", async () => {
    const store = fixture.store({ owner: 'worker-7' });
    const late = freshKey();
    const f1 = await ambiguousAttempt(store, late);
    await store.fail(late, f1, { error: 'smtp 550' });
    expect((await store.inspect(late))!.history).toMatchObject([
      { seq: 1, what: 'late.failed', by: 'worker-7', attempt: 1, error: 'smtp 550', ambiguousMs: expect.any(Number), refused: false },
    ]);

    const overruled = freshKey();
    const g1 = await ambiguousAttempt(store, overruled);
    await store.resolve(overruled, { attemptsSeen: 1, outcome: 'failed', error: 'not sent', by: 'bob' });
    // The paused attempt wakes up and reports it did send: refused, but kept in the trail.
    await expect(store.complete(overruled, g1, 'sent')).rejects.toBeInstanceOf(FencedOutError);
    const record = (await store.inspect(overruled))!;
    expect(record).toMatchObject({ status: 'failed', error: 'not sent' });
    expect(record.history.map((e) => [e.what, e.by, e.attempt, e.refused])).toEqual([
      ['resolve.failed', 'bob', 1, false],
      ['late.completed', 'worker-7', 1, true],
    ]);

    // A settle refused for any other reason (a duplicate complete of a settled attempt) writes nothing.
    const plain = freshKey();
    const p1 = (await store.claim(plain, { effect: 'opaque' })).fence!;
    await store.complete(plain, p1, 'ok');
    const before = await fixture.connect().hgetall(store.redisKey(plain));
    await expect(store.complete(plain, p1, 'ok')).rejects.toBeInstanceOf(FencedOutError);
    expect(await fixture.connect().hgetall(store.redisKey(plain))).toEqual(before);
    expect((await store.inspect(plain))!.history).toEqual([]);
  });

  it("records a reconcile's verdict, kept by the attempt it starts", async () => {
    const store = fixture.store();
    const reconciles = new ReconcileStore({ redis: fixture.client(), prefix: store.prefix });
    const key = freshKey();
    const { fence } = await store.claim(key, { effect: 'opaque', leaseMs: 40 });
    await waitForLeaseExpiry(store, key);
    const unknown = await reconciles.begin(key, fence!, 10_000, 'reconciler-1');
    if (unknown.kind !== 'begun') throw new Error(unknown.kind);
    await reconciles.settle(
      key,
      { ...fence!, reconciles: unknown.reconciles, worker: 'reconciler-1' },
      { verdict: 'unknown', note: 'provider timed out' },
    );
    const begun = await reconciles.begin(key, fence!, 10_000, 'reconciler-2', { again: true });
    if (begun.kind !== 'begun') throw new Error(begun.kind);
    await reconciles.settle(
      key,
      { ...fence!, reconciles: begun.reconciles, worker: 'reconciler-2' },
      { verdict: 'not_started', leaseMs: 10_000 },
    );
    const record = (await store.inspect(key))!;
    expect(record).toMatchObject({ status: 'running', attempts: 2 });
    expect(record.history).toMatchObject([
      { seq: 1, what: 'reconcile.unknown', by: 'reconciler-1', attempt: 1, note: 'provider timed out' },
      { seq: 2, what: 'reconcile.not_started', by: 'reconciler-2', attempt: 1, note: null },
    ]);
  });

  it(`keeps the last ${RECEIPT_HISTORY_CAP} entries, dropping the oldest, and reads receipts without a history`, async () => {
    const store = fixture.store();
    const redis = fixture.connect();
    const key = freshKey();
    const total = RECEIPT_HISTORY_CAP + 3;
    for (let attempt = 1; attempt <= total; attempt++) {
      await ambiguousAttempt(store, key);
      await store.resolve(key, { attemptsSeen: attempt, outcome: 'failed', error: `round ${attempt}`, by: 'ops' });
    }
    const record = (await store.inspect(key))!;
    expect(record.history).toHaveLength(RECEIPT_HISTORY_CAP);
    expect(record.history[0]).toMatchObject({ seq: 4, attempt: 4, error: 'round 4' });
    expect(record.history.at(-1)).toMatchObject({ seq: total, attempt: total, error: `round ${total}` });
    expect(record.historyDropped).toBe(3);
    const fields = Object.keys(await redis.hgetall(store.redisKey(key))).filter((f) => f.startsWith('hist'));
    expect(fields).toHaveLength(RECEIPT_HISTORY_CAP + 1);
    expect(await redis.hget(store.redisKey(key), 'hist_seq')).toBe(String(total));

    // A receipt written before the history existed (no hist fields) reads with an empty one.
    const old = freshKey();
    await ambiguousAttempt(store, old);
    expect((await store.inspect(old))!).toMatchObject({ history: [], historyDropped: 0 });
    // A hand-edited entry is left out, not a failed read.
    await store.resolve(old, { attemptsSeen: 1, outcome: 'completed', result: 1 });
    await redis.hset(store.redisKey(old), 'hist:1', 'not json');
    expect((await store.inspect(old))!).toMatchObject({ history: [], historyDropped: 1 });
  });

  it('cuts long notes and errors on a character boundary, and refuses a blank or oversized by or note before sending', async () => {
    const store = fixture.store();
    const key = freshKey();
    await ambiguousAttempt(store, key);
    await expect(store.resolve(key, { attemptsSeen: 1, outcome: 'failed', error: 'x', by: '  ' })).rejects.toBeInstanceOf(
      InvalidReceiptInputError,
    );
    await expect(store.resolve(key, { attemptsSeen: 1, outcome: 'failed', error: 'x', note: 'n'.repeat(1001) })).rejects.toBeInstanceOf(
      InvalidReceiptInputError,
    );
    const error = `${'a'.repeat(499)}é and more`;
    await store.resolve(key, { attemptsSeen: 1, outcome: 'failed', error, note: 'ü'.repeat(600) });
    const [entry] = (await store.inspect(key))!.history;
    // 499 ASCII bytes, then a two-byte character that would cross the 500-byte cut.
    expect(entry!.error).toBe('a'.repeat(499));
    expect(entry!.note).toBe('ü'.repeat(500));
    expect(entry!.by).toBe(store.owner);
  });
});
