/**
 * The store's durability modes against real replicas: a write is reported
 * done only once the replicas asked for have it. A replica that is stopped
 * and cut off makes a claim time out; the attempt is then settled as never
 * started. On a Cluster the WAIT must reach the master owning the run's slot:
 * stopping that master's replica blocks the claim, stopping another's does not.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ToolCallReceiptKey } from '../../src/core/index.js';
import {
  DurabilityUnsupportedError,
  InvalidDurabilityOptionsError,
  ReceiptNotDurableError,
  ReceiptStore,
  runHashTag,
} from '../../src/redis/index.js';
import { DurabilityWaiter, hasWaitAof, type DurabilityOptions } from '../../src/redis/durability/durability.js';
import { receiptsConnection } from '../../src/redis/connection/connection.js';
import { freshKey } from '../support/redis-fixture.js';
import type { LocalRedis } from '../support/redis-process.js';
import {
  cutOffReplica,
  reconnectReplica,
  startPrimaryWithReplica,
  startRedisCluster,
  withNode,
  type RedisClusterHandle,
} from '../support/redis-cluster.js';
import { uniquePrefix } from '../support/redis.js';
import { sentinelSkipReason } from '../support/redis-sentinel.js';
import { clientKindUnderTest, openCluster, openSingle, type OpenedClient } from '../support/redis-clients.js';

const skip = sentinelSkipReason();

describe.skipIf(skip !== undefined)('durability on one primary with one replica', () => {
  let primary: LocalRedis;
  let replica: LocalRedis;
  const clients: Redis[] = [];
  const opened: OpenedClient[] = [];
  const prefix = uniquePrefix();
  beforeAll(async () => {
    ({ primary, replica } = await startPrimaryWithReplica(prefix, { appendonly: true }));
  });
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await Promise.all(opened.map((c) => c.close()));
    await replica?.stop();
    await primary?.stop();
  });
  // The stores use the client under test (TEST_REDIS_CLIENT): WAIT must go out on the connection that wrote.
  const store = (durability: DurabilityOptions | undefined) => {
    const client = openSingle(clientKindUnderTest(), primary.url);
    opened.push(client);
    return new ReceiptStore({ redis: client.client, prefix, durability });
  };

  it('rejects durability options that ask for nothing or cannot be waited on', () => {
    for (const bad of [
      { replicas: -1 },
      { replicas: 1.5 },
      { replicas: 1, timeoutMs: 0 },
      { replicas: 0 },
      { replicas: 1, aof: 'yes' as never },
    ]) {
      expect(() => store(bad)).toThrow(InvalidDurabilityOptionsError);
    }
  });

  it('claims and completes once the replica has each write', async () => {
    const s = store({ replicas: 1, timeoutMs: 2000 });
    const key = freshKey();
    const claim = await s.claim(key, { effect: 'opaque' });
    expect(claim.decision).toEqual({ kind: 'execute', attempt: 1 });
    await s.complete(key, claim.fence!, { ok: true });
    // What the replica has is what a failover would keep.
    const onReplica = await withNode(replica, (a) => a.hget(s.redisKey(key), 'status'));
    expect(onReplica).toBe('completed');
  });

  it('settles an unacknowledged claim as never started and throws; the next claim runs attempt 2', async () => {
    const s = store({ replicas: 1, timeoutMs: 200 });
    const key = freshKey();
    await cutOffReplica(replica, primary);
    try {
      const error = await s.claim(key, { effect: 'opaque' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ReceiptNotDurableError);
      expect(error).toMatchObject({ code: 'durability.not_acknowledged', write: 'claim', acknowledged: { replicas: 0 } });
      const record = await s.inspect(key);
      expect(record).toMatchObject({ status: 'failed', attempts: 1, tier: 'neverStarted' });
    } finally {
      await reconnectReplica(replica, primary);
    }
    const again = await s.claim(key, { effect: 'opaque' });
    expect(again.decision).toEqual({ kind: 'execute', attempt: 2 });
  });

  it('throws after a complete the replica did not acknowledge; the primary keeps the result for the retry to replay', async () => {
    const s = store({ replicas: 1, timeoutMs: 200 });
    const key = freshKey();
    const claim = await s.claim(key, { effect: 'opaque' });
    await cutOffReplica(replica, primary);
    try {
      await expect(s.complete(key, claim.fence!, 'done')).rejects.toMatchObject({ code: 'durability.not_acknowledged', write: 'complete' });
    } finally {
      await reconnectReplica(replica, primary);
    }
    const retry = await s.claim(key, { effect: 'opaque' });
    expect(retry).toMatchObject({ decision: { kind: 'replay' }, result: 'done' });
  });

  it('shares one WAIT among the writes acknowledged in one tick, and refuses them all together when the replica is cut off', async () => {
    const s = store({ replicas: 1, timeoutMs: 300 });
    const waits = async () => Number(/cmdstat_wait:calls=(\d+)/.exec(await withNode(primary, (a) => a.info('commandstats')))?.[1] ?? 0);
    const keys = Array.from({ length: 24 }, () => freshKey());
    const before = await waits();
    const claims = await Promise.all(keys.map((key) => s.claim(key, { effect: 'opaque' })));
    await Promise.all(claims.map((claim, i) => s.complete(keys[i]!, claim.fence!, i)));
    // 48 writes, each acknowledged: far fewer WAITs than writes.
    expect((await waits()) - before).toBeLessThanOrEqual(12);
    for (const key of keys) expect(await withNode(replica, (a) => a.hget(s.redisKey(key), 'status'))).toBe('completed');

    const refused = Array.from({ length: 12 }, () => freshKey());
    await cutOffReplica(replica, primary);
    try {
      const outcomes = await Promise.allSettled(refused.map((key) => s.claim(key, { effect: 'opaque' })));
      for (const outcome of outcomes) {
        expect(outcome.status).toBe('rejected');
        expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(ReceiptNotDurableError);
      }
      // Each attempt was settled as never started, so its effect never runs.
      for (const key of refused) expect(await s.inspect(key)).toMatchObject({ status: 'failed', attempts: 1, tier: 'neverStarted' });
    } finally {
      await reconnectReplica(replica, primary);
    }
  });

  it('counts a WAIT sent on a newer connection than its write as not acknowledged', async () => {
    const redis = new Redis(primary.url, { maxRetriesPerRequest: 1 });
    clients.push(redis);
    const waiter = new DurabilityWaiter(receiptsConnection(redis), { replicas: 1, timeoutMs: 1000, aof: false });
    await redis.set(`${prefix}:w`, '1');
    expect((await waiter.acknowledged(waiter.mark(`${prefix}:w`))).ok).toBe(true);
    await redis.set(`${prefix}:w`, '2');
    const mark = waiter.mark(`${prefix}:w`);
    const reconnected = new Promise((resolve) => redis.once('ready', resolve));
    redis.disconnect(true); // ioredis reconnects: the WAIT below goes out on a connection that wrote nothing
    await reconnected;
    const ack = await waiter.acknowledged(mark);
    expect(ack.replicas).toBe(1); // the replica is there, and WAIT on the fresh connection says so at once...
    expect(ack.ok).toBe(false); // ...which proves nothing about the write
  });

  it('refuses aof durability before writing anything on a server without WAITAOF', async (ctx) => {
    const s = store({ replicas: 1, aof: true });
    if (await hasWaitAof(opened.at(-1)!.client)) ctx.skip('this redis-server has WAITAOF (7.2+)');
    const key = freshKey();
    await expect(s.claim(key, { effect: 'opaque' })).rejects.toBeInstanceOf(DurabilityUnsupportedError);
    expect(await s.inspect(key)).toBeNull();
  });
});

describe.skipIf(skip !== undefined)('durability on a Cluster with a replica per master', () => {
  let cluster: RedisClusterHandle;
  const opened: OpenedClient[] = [];
  beforeAll(async () => {
    cluster = await startRedisCluster(3, { replicas: 1 });
  });
  afterAll(async () => {
    await Promise.all(opened.map((c) => c.close()));
    await cluster?.stop();
  });

  /** A key whose run lives on master `index`, found by trying fresh runs. */
  async function keyOnMaster(index: number): Promise<ToolCallReceiptKey> {
    const wanted = `${cluster.nodes[index]!.host}:${cluster.nodes[index]!.port}`;
    for (;;) {
      const key = freshKey({ runId: `run-${randomBytes(4).toString('hex')}` });
      if ((await cluster.ownerOf(runHashTag(key.tenantId, key.runId))) === wanted) return key;
    }
  }

  it("waits on the master that owns the run's slot", async () => {
    const client = openCluster(clientKindUnderTest(), cluster.nodes[0]!);
    opened.push(client);
    const store = new ReceiptStore({ redis: client.client, prefix: cluster.prefix, durability: { replicas: 1, timeoutMs: 300 } });
    const onFirst = await keyOnMaster(0);
    const onSecond = await keyOnMaster(1);
    await cutOffReplica(cluster.replicas[0]!, cluster.nodes[0]!);
    try {
      // The first master's replica is gone: its run cannot be claimed; the second master's can.
      await expect(store.claim(onFirst, { effect: 'opaque' })).rejects.toBeInstanceOf(ReceiptNotDurableError);
      expect(await store.inspect(onFirst)).toMatchObject({ status: 'failed', tier: 'neverStarted' });
      const second = await store.claim(onSecond, { effect: 'opaque' });
      expect(second.decision).toEqual({ kind: 'execute', attempt: 1 });
      await store.complete(onSecond, second.fence!, 'sent');
    } finally {
      await reconnectReplica(cluster.replicas[0]!, cluster.nodes[0]!);
    }
    expect((await store.claim(onFirst, { effect: 'opaque' })).decision).toEqual({ kind: 'execute', attempt: 2 });
  });
});
