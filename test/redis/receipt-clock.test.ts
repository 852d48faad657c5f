/**
 * Decisions do not depend on the client's clock: leases live on the server's.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ReceiptStore } from '../../src/redis/receipts/store.js';
import { freshKey, useRedis, waitForLeaseExpiry } from '../support/redis-fixture.js';

const fixture = useRedis();
const HOUR = 3_600_000;
const realNow = Date.now.bind(Date);

afterEach(() => {
  vi.restoreAllMocks();
});

/** Runs one lifecycle of each effect and returns every decision it saw, in order. */
async function lifecycle(store: ReceiptStore): Promise<string[]> {
  const seen: string[] = [];
  const note = (r: { decision: { kind: string }; attempt?: number }) =>
    seen.push(r.attempt === undefined ? r.decision.kind : `${r.decision.kind}:${r.attempt}`);

  const resumable = freshKey();
  const opaque = freshKey();
  note(await store.claim(resumable, { effect: 'resumable', leaseMs: 250 }));
  note(await store.claim(opaque, { effect: 'opaque', leaseMs: 250 }));
  // Right after the claims the leases are live, whatever the local clock says.
  note(await store.claim(resumable, { effect: 'resumable' }));
  note(await store.claim(opaque, { effect: 'opaque' }));
  await waitForLeaseExpiry(store, resumable);
  await waitForLeaseExpiry(store, opaque);
  const takeover = await store.claim(resumable, { effect: 'resumable', leaseMs: 60_000 });
  note(takeover);
  note(await store.claim(opaque, { effect: 'opaque' }));
  note(await store.claim(resumable, { effect: 'resumable' }));
  await store.heartbeat(resumable, takeover.fence!, 60_000);
  await store.complete(resumable, takeover.fence!, { ok: true });
  note(await store.claim(resumable, { effect: 'resumable' }));
  await store.resolve(opaque, { attemptsSeen: 1, outcome: 'failed', error: 'not sent' });
  note(await store.claim(opaque, { effect: 'opaque', leaseMs: 60_000 }));
  return seen;
}

describe('clock independence', () => {
  it('gives the same decisions with the local clock one hour behind, on time, and one hour ahead', async () => {
    const store = fixture.store();
    const expected = ['execute:1', 'execute:1', 'wait', 'wait', 'execute:2', 'ambiguous', 'wait', 'replay', 'execute:2'];
    for (const offset of [-HOUR, 0, HOUR]) {
      const spy = vi.spyOn(Date, 'now').mockImplementation(() => realNow() + offset);
      expect(Date.now() - realNow()).toBeGreaterThanOrEqual(offset - 1_000);
      expect(await lifecycle(store), `local clock offset ${offset} ms`).toEqual(expected);
      spy.mockRestore();
    }
  });

  it('a lease taken while the local clock runs an hour ahead is still live for a client an hour behind', async () => {
    const ahead = fixture.store();
    const behind = fixture.store();
    const key = freshKey();
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() + HOUR);
    const claimed = await ahead.claim(key, { effect: 'resumable', leaseMs: 60_000 });
    vi.restoreAllMocks();
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() - HOUR);
    const other = await behind.claim(key, { effect: 'resumable' });
    expect(other.decision.kind).toBe('wait');
    expect(other.leaseRemainingMs).toBeGreaterThan(50_000);
    const record = await behind.inspect(key);
    expect(record!.leaseUntilMs).toBe(claimed.leaseUntilMs);
    // The lease end is on the server clock, not either client's.
    expect(Math.abs(record!.leaseUntilMs! - (realNow() + 60_000))).toBeLessThan(HOUR / 2);
  });
});
