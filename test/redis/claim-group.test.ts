/**
 * `ReceiptStore.claimGroup`: the calls of a side-by-side group claimed in one
 * script get, each, exactly the claim a separate one would give; a corrupt
 * receipt is left to its own claim; the counting set stays exact; and under
 * durability an unacknowledged group claim starts no effect.
 */
import { describe, expect, it } from 'vitest';
import type { ToolCallReceiptKey } from '../../src/core/identity.js';
import { BreakerStore } from '../../src/redis/receipts/transitions/breaker-store.js';
import { ReceiptNotDurableError } from '../../src/redis/durability/durability.js';
import { InvalidReceiptInputError } from '../../src/redis/errors.js';
import type { ClaimResult, ReceiptStore } from '../../src/redis/receipts/store.js';
import { claimDecision, claimFence, freshKey, useRedis, waitForLeaseExpiry } from '../support/redis-fixture.js';

const fixture = useRedis();

const decided = claimDecision;

/** The calls of one run, one per state to arrange, as `<tool>` with its own arguments. */
const callsOf = (run: ToolCallReceiptKey, tools: readonly string[]) =>
  tools.map((toolName, i) => ({ ...run, toolName, argsHash: `h${i}` }));

describe('claimGroup', () => {
  it('gives every call of the group the decision a separate claim gives', async () => {
    const store = fixture.store();
    const breaker = new BreakerStore({ redis: fixture.connect(), prefix: store.prefix });
    const tools = ['fresh', 'completed', 'held', 'failed', 'lost', 'removed'];
    const arrange = async (calls: ToolCallReceiptKey[]) => {
      const [, completed, held, failed, lost, removed] = calls;
      await store.complete(completed!, await claimFence(store, completed!, { effect: 'opaque' }), { sent: true });
      await claimFence(store, held!, { effect: 'opaque', owner: 'another worker' });
      await store.fail(failed!, await claimFence(store, failed!, { effect: 'opaque' }), { error: 'boom' });
      await claimFence(store, lost!, { effect: 'opaque', leaseMs: 50 });
      await waitForLeaseExpiry(store, lost!);
      await breaker.recordFailure(removed!.tenantId, removed!.runId, removed!.toolName, { removeNow: true, reason: 'removed.' });
    };
    const separate = callsOf(freshKey(), tools);
    const grouped = callsOf(freshKey(), tools);
    await arrange(separate);
    await arrange(grouped);
    const alone: ClaimResult[] = [];
    for (const key of separate) alone.push(await store.claim(key, { effect: 'opaque' }));
    const answers = await store.claimGroup(grouped.map((key) => ({ key, options: { effect: 'opaque' } })));
    const together: ClaimResult[] = [];
    for (const [i, key] of grouped.entries()) together.push(await store.claim(key, { effect: 'opaque' }, answers[i]!));
    expect(together.map(decided)).toEqual(alone.map(decided));
    expect(together.map((c) => c.decision.kind)).toEqual(['execute', 'replay', 'wait', 'execute', 'ambiguous', 'execute']);
    expect(answers.map((a) => a!.answersAlone)).toEqual([true, true, true, false, false, true]);
    expect(together[5]!.toolRemoval).toBe('removed.');
    // The records agree call by call: same status and attempts, the lost attempt flagged in both.
    for (const [i, key] of grouped.entries()) {
      const [mine, theirs] = [await store.inspect(key), await store.inspect(separate[i]!)];
      expect([mine?.status, mine?.attempts, mine?.ambiguousMs !== null], tools[i]).toEqual([
        theirs?.status,
        theirs?.attempts,
        theirs?.ambiguousMs !== null,
      ]);
    }
    const tenant = grouped[0]!.tenantId;
    expect((await store.stats({ tenantId: tenant })).byStatus).toEqual((await store.stats({ tenantId: tenant, scan: true })).byStatus);
  });

  it('the same call twice in a group: the second finds the first attempt running and waits', async () => {
    const store = fixture.store();
    const key = freshKey();
    const answers = await store.claimGroup([
      { key, options: { effect: 'opaque' } },
      { key, options: { effect: 'opaque' } },
    ]);
    expect(answers.map((a) => a!.observation.code)).toEqual([1, 0]);
    expect((await store.claim(key, { effect: 'opaque' }, answers[1]!)).decision.kind).toBe('wait');
  });

  it('leaves a corrupt receipt to its own claim and claims the others', async () => {
    const store = fixture.store();
    const redis = fixture.connect();
    const [ok, corrupt] = callsOf(freshKey(), ['ok', 'corrupt']);
    await redis.hset(store.redisKey(corrupt!), 'attempts', '1');
    const answers = await store.claimGroup([ok!, corrupt!].map((key) => ({ key, options: { effect: 'opaque' } })));
    expect(answers[0]?.observation.code).toBe(1);
    expect(answers[1]).toBeNull();
    expect(await redis.hgetall(store.redisKey(corrupt!))).toEqual({ attempts: '1' });
    await expect(store.claim(corrupt!, { effect: 'opaque' })).rejects.toMatchObject({ code: 'receipt.corrupt' });
  });

  it('refuses calls of different runs, writing nothing', async () => {
    const store = fixture.store();
    const [a, b] = [freshKey(), freshKey()];
    await expect(store.claimGroup([a, b].map((key) => ({ key, options: { effect: 'opaque' } })))).rejects.toBeInstanceOf(
      InvalidReceiptInputError,
    );
    expect(await store.inspect(a)).toBeNull();
  });

  it('with durability not acknowledged: throws, and every attempt it started is settled as never started', async () => {
    const store: ReceiptStore = fixture.store({ durability: { replicas: 1, timeoutMs: 100 } });
    const calls = callsOf(freshKey(), ['one', 'two']);
    const error = await store.claimGroup(calls.map((key) => ({ key, options: { effect: 'opaque' } }))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReceiptNotDurableError);
    for (const key of calls) expect(await store.inspect(key)).toMatchObject({ status: 'failed', attempts: 1, tier: 'neverStarted' });
  });
});
