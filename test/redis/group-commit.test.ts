/**
 * Group commit: claims and completes of one store, and the limit writes
 * beside them, that meet in a tick go out as one script call, each decided
 * exactly as alone, in order; one call at a time never waits for a batch.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ClaimResult } from '../../src/redis/receipts/store-types.js';
import type { ReceiptStore } from '../../src/redis/receipts/store.js';
import { Redis } from 'ioredis';
import { CorruptReceiptError, FencedOutError } from '../../src/redis/errors.js';
import { RedisTimeoutError } from '../../src/redis/index.js';
import { faultTestsSupported } from '../support/redis.js';
import { MAX_BATCH_CALLS } from '../../src/redis/durability/group-commit.js';
import { scriptSource } from '../../src/redis/scripts/scripts.js';
import { ReceiptStore as Store } from '../../src/redis/receipts/store.js';
import { clientKindUnderTest, openSingle } from '../support/redis-clients.js';
import { clusterSkipReason, startRedisCluster } from '../support/redis-cluster.js';
import { freshKey, useRedis } from '../support/redis-fixture.js';
import { clearOfWindowEnd } from '../support/limit-windows.js';
import { defineLimit, LimitStore } from '../../src/limits/index.js';
import { ReceiptsChannel } from '../../src/redis/receipts/channel.js';
import { keyspaceSettings } from '../../src/redis/settings.js';

const fixture = useRedis();

/** How long a fixed window must still run when a test below starts: its reserves, and their deadlines, fit in it. */
const WINDOW_LEFT_MS = 20_000;
/** How long a test's reservations stand unclaimed: well inside {@link WINDOW_LEFT_MS}. */
const RESERVATION_MS = 10_000;

/** Claims, waits and completes through `store`, `calls` at a time; returns each claim's decision. */
async function claimAndComplete(store: ReceiptStore, keys: readonly ReturnType<typeof freshKey>[]): Promise<ClaimResult[]> {
  const claims = await Promise.all(keys.map((key) => store.claim(key, { effect: 'opaque', leaseMs: 60_000 })));
  await Promise.all(
    claims.map((claim, i) => (claim.decision.kind === 'execute' ? store.complete(keys[i]!, claim.fence!, { n: i }) : undefined)),
  );
  return claims;
}

/** What a receipt says, without what differs from run to run (times, epochs, owner). */
async function comparable(store: ReceiptStore, key: ReturnType<typeof freshKey>) {
  const record = await store.inspect(key);
  if (record === null) return null;
  return { status: record.status, attempts: record.attempts, effect: record.effect, result: record.result };
}

describe('group commit', () => {
  it('batches the claims and completes of calls in flight together, each decided as alone', async () => {
    const grouped = fixture.store();
    const alone = fixture.store({ groupCommit: false });
    const run = freshKey();
    // 40 calls of one run and 40 of as many runs; a few are the same call twice.
    const keys = [
      ...Array.from({ length: 40 }, (_, i) => ({ ...run, argsHash: `h${i % 30}` })),
      ...Array.from({ length: 40 }, () => freshKey()),
    ];
    const mirrored = keys.map((k) => ({ ...k, tenantId: `${k.tenantId}-alone` }));

    const viaBatch = await claimAndComplete(grouped, keys);
    const viaAlone = await claimAndComplete(alone, mirrored);

    expect(grouped.groupCommitted.batches).toBeGreaterThan(0);
    expect(grouped.groupCommitted.calls).toBeGreaterThan(grouped.groupCommitted.batches);
    expect(alone.groupCommitted).toEqual({ batches: 0, calls: 0 });
    // In order: the first of two claims of one call executes, the second finds it running.
    expect(viaBatch.map((c) => c.decision.kind)).toEqual(viaAlone.map((c) => c.decision.kind));
    expect(viaBatch.filter((c) => c.decision.kind === 'wait')).toHaveLength(10);
    for (const [i, key] of keys.entries()) {
      expect(await comparable(grouped, key)).toEqual(await comparable(alone, mirrored[i]!));
    }
    // Replays through a batch return what was stored.
    const replays = await Promise.all(keys.slice(0, 30).map((key) => grouped.claim(key, { effect: 'opaque' })));
    expect(replays.map((r) => [r.decision.kind, r.result])).toEqual(keys.slice(0, 30).map((_, i) => ['replay', { n: i }]));
  });

  it('batches the limit writes of calls in flight (reserve, bind, commit, a slot taken and freed), each answered as alone', async () => {
    const channelOf = (groupCommit: boolean) =>
      new ReceiptsChannel(fixture.client(), keyspaceSettings({ prefix: fixture.handle().prefix, groupCommit }), 'group commit test');
    const grouped = channelOf(true);
    const alone = channelOf(false);
    const receipts = fixture.store();
    const emails = defineLimit({ name: 'emails', per: 'tenant', max: 30, windowMs: 3_600_000 });
    const sending = defineLimit({ name: 'sending', per: 'tenant', concurrency: 5 });
    const tenant = freshKey().tenantId;
    // 40 calls of one tenant, each in a run of its own: 30 fit the window, 5 the cap.
    const keys = Array.from({ length: 40 }, () => ({ ...freshKey(), tenantId: tenant }));
    const mirrored = keys.map((k) => ({ ...k, tenantId: `${k.tenantId}-alone` }));

    await clearOfWindowEnd(new LimitStore({ channel: alone }), emails, keys[0]!, WINDOW_LEFT_MS);
    const flow = async (channel: ReceiptsChannel, calls: typeof keys) => {
      const store = new LimitStore({ channel, reservationMs: RESERVATION_MS });
      const reserved = await Promise.all(calls.map((key) => store.reserve(emails, key)));
      await Promise.all(calls.map((key) => receipts.claim(key, { effect: 'opaque' })));
      const shares = reserved.flatMap((r) => (r.granted ? [r.reservation] : []));
      const binds = await Promise.all(shares.map((r) => store.bind(r)));
      const commits = await Promise.all(shares.map((r) => store.commit(r)));
      const requests = calls.map((key) => ({
        cap: sending,
        keys: store.caps.keysOf(sending, key),
        receiptKey: `${key.runId}:${key.argsHash}`,
        token: key.argsHash,
      }));
      const slotOptions = { leaseMs: 60_000, placeMs: 60_000, waker: '', adopt: false };
      const slots = await Promise.all(requests.map((request) => store.caps.acquire(request, slotOptions)));
      const freed = await Promise.all(requests.map((request) => store.caps.release(request)));
      const { used, pending, left } = await store.usage(emails, calls[0]!);
      return {
        reserved: reserved.map((r) => (r.granted ? 'granted' : r.why)),
        binds: binds.map((b) => b.kind),
        commits,
        usage: { used, pending, left },
        slots: slots.map((slot) => slot.kind),
        freed: freed.map((f) => f.released),
        held: (await store.caps.usage(sending, calls[0]!)).held,
      };
    };
    const viaBatch = await flow(grouped, keys);
    const viaAlone = await flow(alone, mirrored);

    expect(grouped.groupCommitted.batches).toBeGreaterThan(0);
    expect(grouped.groupCommitted.calls).toBeGreaterThan(grouped.groupCommitted.batches);
    expect(alone.groupCommitted).toEqual({ batches: 0, calls: 0 });
    expect(viaBatch).toEqual(viaAlone);
    expect(viaBatch.reserved.filter((r) => r === 'granted')).toHaveLength(30);
    expect(new Set(viaBatch.binds)).toEqual(new Set(['bound']));
    expect(viaBatch.usage).toEqual({ used: 30, pending: 0, left: 0 });
    expect(viaBatch.slots.filter((kind) => kind === 'granted')).toHaveLength(5);
    expect(viaBatch.freed.filter(Boolean)).toHaveLength(5);
    expect(viaBatch.held).toBe(0);
  });

  it.each(['fixed', 'sliding'] as const)(
    'runs reserves and commits of one %s count in one batch on what the entries before wrote: answers, counts and expiries as alone',
    async (kind) => {
      const channelOf = (groupCommit: boolean) =>
        new ReceiptsChannel(fixture.client(), keyspaceSettings({ prefix: fixture.handle().prefix, groupCommit }), 'group commit test');
      const grouped = channelOf(true);
      const alone = channelOf(false);
      const redis = fixture.connect();
      const emails = defineLimit({ name: 'emails', per: 'tenant', max: 30, windowMs: 3_600_000, kind });
      const tenant = freshKey().tenantId;
      const keys = Array.from({ length: 35 }, () => ({ ...freshKey(), tenantId: tenant }));
      const mirrored = keys.map((k) => ({ ...k, tenantId: `${k.tenantId}-alone` }));

      if (kind === 'fixed') await clearOfWindowEnd(new LimitStore({ channel: alone }), emails, keys[0]!, WINDOW_LEFT_MS);
      const flow = async (channel: ReceiptsChannel, calls: typeof keys) => {
        const store = new LimitStore({ channel, reservationMs: RESERVATION_MS });
        const first = await Promise.all(calls.slice(0, 20).map((key) => store.reserve(emails, key)));
        const shares = first.flatMap((r) => (r.granted ? [r.reservation] : []));
        // In one tick: the 20 commits, then 15 reserves of the same count, which see the commits before them.
        const [commits, late] = await Promise.all([
          Promise.all(shares.map((r) => store.commit(r))),
          Promise.all(calls.slice(20).map((key) => store.reserve(emails, key))),
        ]);
        const { used, pending, left } = await store.usage(emails, calls[0]!);
        const keysOfCount = store.keysOf(emails, calls[0]!);
        const [seconds, micros] = await redis.time();
        const nowMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
        const ttls = await Promise.all([keysOfCount.state, keysOfCount.due, keysOfCount.done].map((key) => redis.pttl(key)));
        const keptUntil = Number(await redis.zscore(store.index.redisKey, keysOfCount.state));
        return {
          answers: {
            first: first.map((r) => (r.granted ? 'granted' : r.why)),
            commits,
            late: late.map((r) => (r.granted ? 'granted' : r.why)),
            usage: { used, pending, left },
          },
          ttls,
          // How long the index lists the count, from now: what the last reserve's keep answered.
          listedForMs: keptUntil - nowMs,
        };
      };
      const viaBatch = await flow(grouped, keys);
      const viaAlone = await flow(alone, mirrored);

      expect(grouped.groupCommitted.calls).toBeGreaterThan(grouped.groupCommitted.batches);
      expect(viaBatch.answers).toEqual(viaAlone.answers);
      // 20 committed and 10 pending fill the window; the last 5 wait on the pending ones (held in a fixed window; a
      // sliding window's pending shares may be of running calls, never said to be held).
      const waiting = kind === 'fixed' ? 'held' : 'full';
      expect(viaBatch.answers.late).toEqual([...Array<string>(10).fill('granted'), ...Array<string>(5).fill(waiting)]);
      expect(viaBatch.answers.usage).toEqual({ used: 30, pending: 10, left: 0 });
      // The reserves kept the keys after the batch's last entry, and said so: the index lists the count as long.
      expect(Math.abs(viaBatch.listedForMs - viaAlone.listedForMs)).toBeLessThan(5_000);
      expect(viaBatch.listedForMs).toBeGreaterThan(3_600_000);
      for (const side of [viaBatch, viaAlone]) {
        // Every key of the count expires, within a few windows.
        for (const ttl of side.ttls) {
          expect(ttl).toBeGreaterThan(3_600_000);
          expect(ttl).toBeLessThanOrEqual(3 * 3_600_000);
        }
      }
    },
  );

  it('batches completes that claim the next call of their turn, each as alone', async () => {
    const grouped = fixture.store();
    const alone = fixture.store({ groupCommit: false });
    const turn = async (store: ReceiptStore, tag: string) => {
      const runs = Array.from({ length: 20 }, () => freshKey({ tenantId: `${tag}-${randomBytes(4).toString('hex')}` }));
      const firsts = await Promise.all(runs.map((run) => store.claim(run, { effect: 'opaque' })));
      // Runs 0..4 carry on with the call they complete (the next call is the same call).
      const nexts = runs.map((run, i) => (i < 5 ? run : { ...run, argsHash: 'next' }));
      const before = store.groupCommitted.batches;
      const fused = await Promise.all(
        runs.map((run, i) =>
          store.completeAndClaim(run, firsts[i]!.fence!, `first ${i}`, { key: nexts[i]!, options: { effect: 'opaque' } }),
        ),
      );
      const seconds = await Promise.all(nexts.map((next, i) => store.claim(next, { effect: 'opaque' }, fused[i]!.ahead ?? undefined)));
      return { fused, fusedBatches: store.groupCommitted.batches - before, seconds: seconds.map((c) => [c.decision.kind, c.result]), runs };
    };
    const viaBatch = await turn(grouped, 'grouped');
    const viaAlone = await turn(alone, 'alone');
    expect(viaBatch.fusedBatches).toBeGreaterThan(0);
    expect(viaAlone.fusedBatches).toBe(0);
    expect(viaBatch.fused.map((f) => f.settled.late)).toEqual(viaAlone.fused.map((f) => f.settled.late));
    expect(viaBatch.seconds).toEqual(viaAlone.seconds);
    expect(viaBatch.seconds.slice(0, 5)).toEqual(Array.from({ length: 5 }, (_, i) => ['replay', `first ${i}`]));
    expect(viaBatch.seconds.slice(5).every(([kind]) => kind === 'execute')).toBe(true);
    for (const run of viaBatch.runs) expect((await grouped.inspect(run))?.status).toBe('completed');
  });

  it.skipIf(!faultTestsSupported())('releases every claim of a batch whose reply was lost, once Redis answers again', async () => {
    const redis = new Redis(fixture.handle().url, { commandTimeout: 500, maxRetriesPerRequest: 1 });
    try {
      const store = new Store({ redis, prefix: fixture.handle().prefix, owner: 'frozen' });
      await store.inspect(freshKey()); // connected, scripts known
      const keys = Array.from({ length: 10 }, () => freshKey());
      // Frozen before the claims go out: the batch lands when Redis wakes, after its reply was given up.
      await fixture.handle().pause();
      setTimeout(() => void fixture.handle().resume(), 2_000);
      const outcomes = await Promise.allSettled(keys.map((key) => store.claim(key, { effect: 'opaque' })));
      expect(store.groupCommitted.batches).toBeGreaterThan(0);
      for (const outcome of outcomes) {
        expect(outcome.status).toBe('rejected');
        const error = (outcome as PromiseRejectedResult).reason as RedisTimeoutError;
        expect(error).toBeInstanceOf(RedisTimeoutError);
        expect(error.releases).toEqual([expect.objectContaining({ attempt: 1, outcome: 'released' })]);
      }
      // Each attempt a lost reply started is settled as never started: none is left running to turn ambiguous.
      // Read back on a client without the short deadline, so a slow machine cannot fail the check itself.
      const checker = fixture.store();
      for (const key of keys) expect(await checker.inspect(key)).toMatchObject({ status: 'failed', attempts: 1, tier: 'neverStarted' });
      expect(await checker.listAmbiguous()).toEqual([]);
      const again = await Promise.all(keys.map((key) => checker.claim(key, { effect: 'opaque' })));
      expect(again.map((c) => c.decision)).toEqual(keys.map(() => ({ kind: 'execute', attempt: 2 })));
    } finally {
      redis.disconnect();
    }
  });

  it('never batches one call at a time', async () => {
    const store = fixture.store();
    for (let i = 0; i < 20; i++) await claimAndComplete(store, [freshKey()]);
    expect(store.groupCommitted).toEqual({ batches: 0, calls: 0 });
  });

  it(`splits a tick's calls into batches of at most ${MAX_BATCH_CALLS}`, async () => {
    const store = fixture.store();
    const keys = Array.from({ length: 3 * MAX_BATCH_CALLS }, () => freshKey());
    const claims = await claimAndComplete(store, keys);
    expect(claims.every((c) => c.decision.kind === 'execute')).toBe(true);
    const { batches, calls } = store.groupCommitted;
    expect(calls / batches).toBeLessThanOrEqual(MAX_BATCH_CALLS);
    expect(batches).toBeGreaterThanOrEqual(Math.ceil(calls / MAX_BATCH_CALLS));
    for (const key of keys) expect((await store.inspect(key))?.status).toBe('completed');
  });

  it('fails only the call whose receipt is corrupt, writing nothing for it', async () => {
    const store = fixture.store();
    const redis = fixture.connect();
    const keys = Array.from({ length: 12 }, () => freshKey());
    await redis.set(store.redisKey(keys[5]!), 'not a hash');
    await redis.hset(store.redisKey(keys[8]!), 'status', 'bogus');
    const outcomes = await Promise.allSettled(keys.map((key) => store.claim(key, { effect: 'opaque' })));
    expect(store.groupCommitted.batches).toBeGreaterThan(0);
    for (const [i, outcome] of outcomes.entries()) {
      if (i === 5 || i === 8) {
        expect(outcome.status).toBe('rejected');
        expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(CorruptReceiptError);
        expect((outcome as PromiseRejectedResult).reason).toMatchObject({ redisKey: store.redisKey(keys[i]!) });
      } else {
        expect(outcome).toMatchObject({ status: 'fulfilled', value: { decision: { kind: 'execute', attempt: 1 } } });
      }
    }
    expect(await redis.get(store.redisKey(keys[5]!))).toBe('not a hash');
    expect(await redis.hgetall(store.redisKey(keys[8]!))).toEqual({ status: 'bogus' });
  });

  it('refuses a stale fence inside a batch, and settles the others', async () => {
    const store = fixture.store();
    const keys = Array.from({ length: 10 }, () => freshKey());
    const claims = await Promise.all(keys.map((key) => store.claim(key, { effect: 'opaque' })));
    const stale = { attempt: 1, epoch: 'not-the-epoch' };
    const outcomes = await Promise.allSettled(keys.map((key, i) => store.complete(key, i === 3 ? stale : claims[i]!.fence!, `r${i}`)));
    expect(store.groupCommitted.batches).toBeGreaterThan(0);
    expect((outcomes[3] as PromiseRejectedResult).reason).toBeInstanceOf(FencedOutError);
    for (const [i, key] of keys.entries()) {
      expect(await store.inspect(key)).toMatchObject(
        i === 3 ? { status: 'running', attempts: 1 } : { status: 'completed', result: `r${i}` },
      );
    }
  });

  it('refuses a batch whose layout does not hold, writing nothing', async () => {
    const store = fixture.store();
    const redis = fixture.connect();
    const key = store.redisKey(freshKey());
    const keys = [key, `${key}:i`, `${key}:b`, `${key}:c`];
    // The layout is read whole before any entry runs: the good claim first, then a malformed entry.
    const claimArgs = [60_000, 60_000, 'me', 'opaque', 't', 'r', 'send_email', 'h', 'x:removed', 'x:rejections', 'e1', ''];
    await expect(
      redis.eval(scriptSource('commit-batch-N.lua'), 8, ...keys, ...keys, 2, 'claim', 12, ...claimArgs, 'claim', 40, 'x'),
    ).rejects.toThrow(/TRC_BATCH entry 2/);
    expect(await redis.exists(key)).toBe(0);
  });

  it.skipIf(clusterSkipReason() !== undefined)(
    'behind one endpoint that refuses keys of several slots in one script: sends that batch\u2019s calls alone, and every later one',
    async () => {
      // A one-master cluster reached as a single server: it owns every slot, yet refuses CROSSSLOT scripts, as a proxy would.
      const cluster = await startRedisCluster(1);
      const opened = openSingle(clientKindUnderTest(), cluster.nodes[0]!.url);
      try {
        const store = new Store({ redis: opened.client, prefix: cluster.prefix });
        const keys = Array.from({ length: 12 }, () => freshKey());
        const claims = await Promise.all(keys.map((key) => store.claim(key, { effect: 'opaque' })));
        expect(claims.map((c) => c.decision.kind)).toEqual(keys.map(() => 'execute'));
        const refused = store.groupCommitted.batches;
        expect(refused).toBeGreaterThan(0);
        await Promise.all(claims.map((claim, i) => store.complete(keys[i]!, claim.fence!, i)));
        expect(store.groupCommitted.batches).toBe(refused);
        for (const [i, key] of keys.entries())
          expect(await store.inspect(key)).toMatchObject({ status: 'completed', attempts: 1, result: i });
      } finally {
        await opened.close();
        await cluster.stop();
      }
    },
  );
});
