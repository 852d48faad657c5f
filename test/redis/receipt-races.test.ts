/**
 * Races between many workers, each on its own connection.
 */
import { describe, expect, it } from 'vitest';
import type { ReceiptStore } from '../../src/redis/receipts/store.js';
import { freshKey, useRedis, waitForLeaseExpiry } from '../support/redis-fixture.js';

const fixture = useRedis();
const WORKERS = 64;

function stores(count: number, options: { leaseMs?: number } = {}): ReceiptStore[] {
  return Array.from({ length: count }, (_, i) => fixture.store({ ...options, owner: `worker-${i}` }));
}

async function connected(all: readonly ReceiptStore[]): Promise<void> {
  // Open every connection first so the claims below really overlap.
  await Promise.all(all.map((s) => s.inspect(freshKey())));
}

describe('races', () => {
  it(`${WORKERS} concurrent claims of one new call: exactly one executes, the rest wait`, async () => {
    const workers = stores(WORKERS);
    await connected(workers);
    const key = freshKey();
    const results = await Promise.all(workers.map((s) => s.claim(key, { effect: 'opaque', leaseMs: 60_000 })));
    const executes = results.filter((r) => r.decision.kind === 'execute');
    const waits = results.filter((r) => r.decision.kind === 'wait');
    expect(executes).toHaveLength(1);
    expect(executes[0]!.attempt).toBe(1);
    expect(waits).toHaveLength(WORKERS - 1);
    const record = await workers[0]!.inspect(key);
    expect(record).toMatchObject({ status: 'running', attempts: 1 });
    expect(record!.owner).toBe(`worker-${results.indexOf(executes[0]!)}`);
  });

  it(`${WORKERS} concurrent takeovers of an expired resumable attempt: exactly one wins attempt 2`, async () => {
    const workers = stores(WORKERS);
    await connected(workers);
    const key = freshKey();
    const stale = (await workers[0]!.claim(key, { effect: 'resumable', leaseMs: 150 })).fence!;
    await workers[0]!.recordStep(key, stale, 'first', 'done');
    await waitForLeaseExpiry(workers[0]!, key);
    const results = await Promise.all(workers.map((s) => s.claim(key, { effect: 'resumable', leaseMs: 60_000 })));
    const executes = results.filter((r) => r.decision.kind === 'execute');
    expect(executes).toHaveLength(1);
    expect(executes[0]).toMatchObject({ attempt: 2, state: { kind: 'running', attempts: 1, leaseExpired: true } });
    expect(results.filter((r) => r.decision.kind === 'wait')).toHaveLength(WORKERS - 1);
    expect(await workers[0]!.inspect(key)).toMatchObject({ status: 'running', attempts: 2, steps: { first: 'done' } });

    // The loser that used to own attempt 1 can no longer write.
    await expect(workers[0]!.complete(key, stale, 'stale')).rejects.toMatchObject({ code: 'receipt.fenced_out' });
    await expect(workers[0]!.recordStep(key, stale, 'second', 'stale')).rejects.toMatchObject({ code: 'receipt.fenced_out' });
  });

  it(`${WORKERS} concurrent retries of a failed call: exactly one runs attempt 2`, async () => {
    const workers = stores(WORKERS);
    await connected(workers);
    const key = freshKey();
    const first = (await workers[0]!.claim(key, { effect: 'opaque' })).fence!;
    await workers[0]!.fail(key, first, { error: 'timeout', tier: 'neverStarted' });
    const results = await Promise.all(workers.map((s) => s.claim(key, { effect: 'opaque', leaseMs: 60_000 })));
    expect(results.filter((r) => r.decision.kind === 'execute').map((r) => r.attempt)).toEqual([2]);
    expect(results.filter((r) => r.decision.kind === 'wait')).toHaveLength(WORKERS - 1);
  });

  it(`${WORKERS} concurrent claims of an expired opaque attempt: all ambiguous, none executes, flagged once`, async () => {
    const workers = stores(WORKERS);
    await connected(workers);
    const key = freshKey();
    await workers[0]!.claim(key, { effect: 'opaque', leaseMs: 150 });
    await waitForLeaseExpiry(workers[0]!, key);
    const results = await Promise.all(workers.map((s) => s.claim(key, { effect: 'opaque' })));
    expect(results.every((r) => r.decision.kind === 'ambiguous')).toBe(true);
    expect(new Set(results.map((r) => r.ambiguousMs)).size).toBe(1);
    expect(await workers[0]!.inspect(key)).toMatchObject({ status: 'running', attempts: 1 });
  });

  it('a stale attempt racing the settling of its successor never overwrites it', async () => {
    const workers = stores(8);
    await connected(workers);
    const key = freshKey();
    const stale = (await workers[0]!.claim(key, { effect: 'resumable', leaseMs: 150 })).fence!;
    await waitForLeaseExpiry(workers[0]!, key);
    const takeover = await workers[1]!.claim(key, { effect: 'resumable', leaseMs: 60_000 });
    expect(takeover.attempt).toBe(2);
    const outcomes = await Promise.allSettled([
      workers[1]!.complete(key, takeover.fence!, 'attempt-2'),
      ...workers.slice(2).map((w) => w.complete(key, stale, 'attempt-1')),
    ]);
    expect(outcomes[0]!.status).toBe('fulfilled');
    expect(outcomes.slice(1).every((o) => o.status === 'rejected')).toBe(true);
    expect((await workers[0]!.inspect(key))?.result).toBe('attempt-2');
  });
});
