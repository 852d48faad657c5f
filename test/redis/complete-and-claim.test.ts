/**
 * `ReceiptStore.completeAndClaim`: a complete that carries the next call's
 * claim in the same script gives that call exactly the claim a separate one
 * would, sees what the complete wrote, claims nothing when the complete does
 * not land, keeps the counting set exact, and under durability never lets an
 * unacknowledged claim start its effect.
 */
import { describe, expect, it } from 'vitest';
import type { ToolCallReceiptKey } from '../../src/core/identity.js';
import { BreakerStore } from '../../src/redis/receipts/transitions/breaker-store.js';
import { ReceiptNotDurableError } from '../../src/redis/durability/durability.js';
import { FencedOutError, InvalidReceiptInputError } from '../../src/redis/errors.js';
import type { ReceiptStore } from '../../src/redis/receipts/store.js';
import { claimDecision, claimFence, freshKey, useRedis, waitForLeaseExpiry } from '../support/redis-fixture.js';

const fixture = useRedis();

/** A second call of the same run as `key`. */
const sibling = (key: ToolCallReceiptKey, toolName = 'create_ticket'): ToolCallReceiptKey => ({
  ...key,
  toolName,
  argsHash: `${key.argsHash}-2`,
});

const decided = claimDecision;

/**
 * Completes a fresh first call while claiming `next` in the same script,
 * then claims `next` with that answer; returns the claim.
 */
async function fusedClaim(
  store: ReceiptStore,
  first: ToolCallReceiptKey,
  next: ToolCallReceiptKey,
  effect: 'opaque' | 'resumable' = 'opaque',
) {
  const fence = await claimFence(store, first, { effect: 'opaque' });
  const { settled, ahead } = await store.completeAndClaim(first, fence, 'first done', { key: next, options: { effect } });
  expect(settled.late).toBeNull();
  expect(ahead).not.toBeNull();
  expect(await store.inspect(first)).toMatchObject({ status: 'completed', result: 'first done' });
  return { ahead: ahead!, claim: await store.claim(next, { effect }, ahead!) };
}

describe('completeAndClaim', () => {
  it('creates the next receipt as a claim would, and the call then owns attempt 1 without another command', async () => {
    const store = fixture.store();
    const first = freshKey();
    const next = sibling(first);
    const { ahead, claim } = await fusedClaim(store, first, next);
    expect(ahead.answersAlone).toBe(true);
    expect(claim).toMatchObject({ decision: { kind: 'execute', attempt: 1 }, attempt: 1, fence: ahead.fence });
    const created = await store.inspect(next);
    expect(created).toMatchObject({
      status: 'running',
      attempts: 1,
      owner: store.owner,
      effect: 'opaque',
      key: next,
      epoch: ahead.fence!.epoch,
    });
    // The fused claim's attempt is fenced like any other: it completes.
    await store.complete(next, claim.fence!, 'second done');
    expect((await store.listRun(first.tenantId, first.runId)).map((r) => r.status)).toEqual(['completed', 'completed']);
    // The run's counting set is exact: counts match a receipt-by-receipt read.
    expect((await store.stats({ tenantId: first.tenantId })).total).toBe(2);
    expect((await store.stats({ tenantId: first.tenantId })).byStatus).toEqual(
      (await store.stats({ tenantId: first.tenantId, scan: true })).byStatus,
    );
  });

  it('gives each existing state of the next call the decision a separate claim gives', async () => {
    const store = fixture.store();
    const breaker = new BreakerStore({ redis: fixture.connect(), prefix: store.prefix });
    const cases: Record<string, (next: ToolCallReceiptKey) => Promise<void>> = {
      'completed: replay': async (next) => {
        await store.complete(next, await claimFence(store, next, { effect: 'opaque' }), { sent: true });
      },
      'held by a live attempt: wait': async (next) => {
        await claimFence(store, next, { effect: 'opaque', owner: 'another worker' });
      },
      'failed: execute as attempt 2': async (next) => {
        await store.fail(next, await claimFence(store, next, { effect: 'opaque' }), { error: 'boom' });
      },
      'an opaque attempt that lost its lease: ambiguous': async (next) => {
        await claimFence(store, next, { effect: 'opaque', leaseMs: 50 });
        await waitForLeaseExpiry(store, next);
      },
      'tool removed, no receipt: execute refused with the removal': async (next) => {
        await breaker.recordFailure(next.tenantId, next.runId, next.toolName, { removeNow: true, reason: 'create_ticket was removed.' });
      },
    };
    for (const [name, arrange] of Object.entries(cases)) {
      // Two runs in the same state: one claimed separately, one by a fused complete.
      const separate = sibling(freshKey());
      const fusedFirst = freshKey();
      const fused = sibling(fusedFirst);
      await arrange(separate);
      await arrange(fused);
      const alone = await store.claim(separate, { effect: 'opaque' });
      const { ahead, claim } = await fusedClaim(store, fusedFirst, fused);
      expect(decided(claim), name).toEqual(decided(alone));
      // Only a takeover or an ambiguous attempt needs more than the fused answer.
      expect(ahead.answersAlone, name).toBe(!['execute', 'ambiguous'].includes(alone.decision.kind) || alone.toolRemoval !== undefined);
      // Both flagged the ambiguous attempt alike.
      expect((await store.inspect(fused))?.ambiguousMs !== null, name).toBe((await store.inspect(separate))?.ambiguousMs !== null);
    }
  });

  it('claims the next call after the complete: it sees the rejection streak the complete ended', async () => {
    const store = fixture.store();
    const breaker = new BreakerStore({ redis: fixture.connect(), prefix: store.prefix });
    const first = freshKey();
    const next = sibling(first, first.toolName);
    await breaker.recordRejection(first.tenantId, first.runId, first.toolName);
    await breaker.recordRejection(first.tenantId, first.runId, first.toolName);
    expect((await breaker.state(first.tenantId, first.runId, first.toolName)).rejections).toBe(2);
    const { claim } = await fusedClaim(store, first, next);
    expect(claim.rejectionStreak).toBe(0);
  });

  it('the same call twice in one turn: the claim finds the receipt just completed and replays it', async () => {
    const store = fixture.store();
    const key = freshKey();
    const fence = await claimFence(store, key, { effect: 'opaque' });
    const { ahead } = await store.completeAndClaim(key, fence, 'once', { key, options: { effect: 'opaque' } });
    const claim = await store.claim(key, { effect: 'opaque' }, ahead!);
    expect(claim).toMatchObject({ decision: { kind: 'replay' }, result: 'once' });
  });

  it('a fenced-out complete claims nothing and writes nothing', async () => {
    const store = fixture.store();
    const first = freshKey();
    const next = sibling(first);
    const fence = await claimFence(store, first, { effect: 'resumable', leaseMs: 50 });
    await waitForLeaseExpiry(store, first);
    await claimFence(store, first, { effect: 'resumable' }); // attempt 2 takes over
    const error = await store.completeAndClaim(first, fence, 'late', { key: next, options: { effect: 'opaque' } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FencedOutError);
    expect(await store.inspect(first)).toMatchObject({ status: 'running', attempts: 2 });
    expect(await store.inspect(next)).toBeNull();
  });

  it("a corrupt next receipt: the complete lands, nothing is claimed, and the call's own claim says why", async () => {
    const store = fixture.store();
    const redis = fixture.connect();
    const first = freshKey();
    const next = sibling(first);
    await redis.hset(store.redisKey(next), 'attempts', '1');
    const fence = await claimFence(store, first, { effect: 'opaque' });
    const { ahead } = await store.completeAndClaim(first, fence, 'done', { key: next, options: { effect: 'opaque' } });
    expect(ahead).toBeNull();
    expect(await store.inspect(first)).toMatchObject({ status: 'completed' });
    expect(await redis.hgetall(store.redisKey(next))).toEqual({ attempts: '1' });
    await expect(store.claim(next, { effect: 'opaque' })).rejects.toMatchObject({ code: 'receipt.corrupt' });
  });

  it('refuses a next call of another run, and a prefetched claim handed to another call', async () => {
    const store = fixture.store();
    const first = freshKey();
    const fence = await claimFence(store, first, { effect: 'opaque' });
    await expect(store.completeAndClaim(first, fence, 'x', { key: freshKey(), options: { effect: 'opaque' } })).rejects.toBeInstanceOf(
      InvalidReceiptInputError,
    );
    expect(await store.inspect(first)).toMatchObject({ status: 'running' });
    const next = sibling(first);
    const { ahead } = await store.completeAndClaim(first, fence, 'x', { key: next, options: { effect: 'opaque' } });
    await expect(store.claim(sibling(first, 'other_tool'), { effect: 'opaque' }, ahead!)).rejects.toBeInstanceOf(InvalidReceiptInputError);
    await expect(store.claim(next, { effect: 'resumable' }, ahead!)).rejects.toBeInstanceOf(InvalidReceiptInputError);
  });

  it('with durability not acknowledged: throws, and the attempt it claimed is settled as never started', async () => {
    // No replica answers this server, so every WAIT falls short.
    const store = fixture.store({ durability: { replicas: 1, timeoutMs: 100 } });
    const plain = fixture.store({ prefix: store.prefix });
    const first = freshKey();
    const next = sibling(first);
    const fence = await claimFence(plain, first, { effect: 'opaque' });
    const error = await store.completeAndClaim(first, fence, 'done', { key: next, options: { effect: 'opaque' } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReceiptNotDurableError);
    expect(error).toMatchObject({ write: 'complete' });
    // The primary has the complete (a retry replays it); the next call's attempt never started.
    expect(await plain.inspect(first)).toMatchObject({ status: 'completed', result: 'done' });
    expect(await plain.inspect(next)).toMatchObject({ status: 'failed', attempts: 1, tier: 'neverStarted' });
    expect((await plain.claim(next, { effect: 'opaque' })).decision).toEqual({ kind: 'execute', attempt: 2 });
  });
});
