/**
 * The connection adapters themselves: which objects `redis:` accepts (never
 * a client that cannot send until it is opened again), that
 * each client reaches the same server state, that a script flushed from the
 * server is sent again by text (singly and in a batch), that a closed
 * node-redis client reads as a lost connection never sent, that a frozen
 * server fails a claim at the store's deadline on every client, and the
 * stores on a Sentinel-backed client of each kind.
 */
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { createClient as createClient6, createClientPool } from 'redis';
import { createClient as createClient5 } from 'redis-v5';
import { z } from 'zod';
import { defineTool, withToolReceipts } from '../../src/bullmq/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkedConnection, InvalidRedisConnectionError, type RedisConnection } from '../../src/redis/connection/connection.js';
import { checkRedisForReceipts } from '../../src/redis/operators/doctor.js';
import { ReceiptStore } from '../../src/redis/receipts/store.js';
import { RedisToolResultStore } from '../../src/offload/redis-store.js';
import { RedisConnectionLostError, RedisTimeoutError } from '../../src/redis/connection/unreachable.js';
import { faultTestsSupported } from '../support/redis.js';
import { CLIENT_KINDS, openSentinel, openSingle, type OpenedClient } from '../support/redis-clients.js';
import { freshKey, useRedis } from '../support/redis-fixture.js';
import { SENTINEL_MASTER_NAME, sentinelSkipReason, startSentinelSet, type SentinelSetHandle } from '../support/redis-sentinel.js';

const fixture = useRedis();
const opened: OpenedClient[] = [];
afterAll(async () => {
  await Promise.all(opened.map((c) => c.close()));
});

function open(kind: (typeof CLIENT_KINDS)[number]): RedisConnection {
  const client = openSingle(kind, fixture.handle().url);
  opened.push(client);
  return client.client;
}

describe('checkedConnection', () => {
  it.each(CLIENT_KINDS)('wraps a %s client once, and says which client it is', (kind) => {
    const client = open(kind);
    const adapter = checkedConnection(client, 'test');
    expect(adapter).toMatchObject({ client: kind.startsWith('ioredis') ? 'ioredis' : 'node-redis', topology: 'single', isCluster: false });
    expect(checkedConnection(client, 'test')).toBe(adapter);
    expect(checkedConnection(adapter, 'test')).toBe(adapter);
  });

  it('refuses a node-redis client pool, whose commands may each take another connection', () => {
    const pool = createClientPool({ url: fixture.handle().url });
    const error = (() => {
      try {
        checkedConnection(pool, 'ReceiptStore');
      } catch (e) {
        return e as InvalidRedisConnectionError;
      }
    })();
    expect(error).toBeInstanceOf(InvalidRedisConnectionError);
    expect(error?.code).toBe('redis.invalid_connection');
    expect(error?.message).toMatch(
      /^ReceiptStore needs `redis`: an ioredis Redis or Cluster .* or a connected node-redis client .*createClient, createCluster or createSentinel.*got a node-redis client pool/,
    );
  });

  it.each([
    ['node-redis 6', (url: string) => createClient6({ url })],
    ['node-redis 5', (url: string) => createClient5({ url })],
  ] as const)(
    'refuses a %s client that was never connected, or was closed, when the store or processor is made, saying to connect it',
    async (_name, create) => {
      const client: { connect(): Promise<unknown>; close(): Promise<unknown> } = create(fixture.handle().url);
      const refusal =
        /needs `redis`: .*; got a node-redis client that is not open \(never connected, or closed\): call `await client\.connect\(\)` before handing it over/;
      const tool = defineTool({ name: 'echo', input: z.object({}), effect: 'opaque', execute: () => 'ok' });
      expect(() => new ReceiptStore({ redis: client as unknown as RedisConnection })).toThrow(InvalidRedisConnectionError);
      expect(() => new ReceiptStore({ redis: client as unknown as RedisConnection })).toThrow(refusal);
      expect(() => withToolReceipts({ redis: client as unknown as RedisConnection, tools: [tool] })).toThrow(refusal);
      await client.connect();
      const store = new ReceiptStore({ redis: client as unknown as RedisConnection, prefix: `${fixture.handle().prefix}:connected` });
      expect((await store.claim(freshKey(), { effect: 'opaque' })).decision.kind).toBe('execute');
      await client.close();
      expect(() => new ReceiptStore({ redis: client as unknown as RedisConnection })).toThrow(refusal);
    },
  );

  it('takes an ioredis client with lazyConnect (it connects on its first command), and refuses one that was closed', async () => {
    const lazy = new Redis(fixture.handle().url, { lazyConnect: true });
    expect(lazy.status).toBe('wait');
    const store = new ReceiptStore({ redis: lazy, prefix: `${fixture.handle().prefix}:lazy` });
    expect((await store.claim(freshKey(), { effect: 'opaque' })).decision.kind).toBe('execute');
    const ended = once(lazy, 'end');
    await lazy.quit();
    await ended;
    expect(lazy.status).toBe('end');
    expect(() => new ReceiptStore({ redis: lazy })).toThrow(
      /got an ioredis client that was closed \(status end\): call connect\(\) on it again, or make a new one$/,
    );
  });

  it('refuses an ioredis client with a keyPrefix at every entry point (SCAN patterns and keys in arguments would miss it)', async () => {
    const prefixed = new Redis(fixture.handle().url, { keyPrefix: 'app:', lazyConnect: true });
    try {
      const refusal = /got an ioredis client with keyPrefix "app:": use a client without it, and the `prefix` option to name the keyspace$/;
      const tool = defineTool({ name: 'echo', input: z.object({}), effect: 'opaque', execute: () => 'ok' });
      expect(() => new ReceiptStore({ redis: prefixed })).toThrow(refusal);
      expect(() => withToolReceipts({ redis: prefixed, tools: [tool] })).toThrow(InvalidRedisConnectionError);
      expect(() => new RedisToolResultStore({ redis: prefixed })).toThrow(refusal);
    } finally {
      prefixed.disconnect();
    }
  });

  it('refuses some other object, naming both clients it would take', () => {
    expect(() => checkedConnection({ get: () => undefined }, 'BreakerStore')).toThrow(
      /^BreakerStore needs `redis`: an ioredis .* node-redis .*; got an object without the methods of an ioredis client \(defineCommand, pipeline, on\) or of a node-redis one \(sendCommand\)$/,
    );
  });
});

describe.each(CLIENT_KINDS)('the receipt store on %s', (kind) => {
  it('sees what another client wrote, and writes what ioredis reads', async () => {
    const prefix = `${fixture.handle().prefix}:${kind}`;
    const theirs = new ReceiptStore({ redis: fixture.connect(), prefix });
    const ours = new ReceiptStore({ redis: open(kind), prefix });
    const key = freshKey();
    const { fence } = await theirs.claim(key, { effect: 'opaque' });
    expect((await ours.claim(key, { effect: 'opaque' })).decision.kind).toBe('wait');
    await theirs.complete(key, fence!, { id: 7 });
    expect(await ours.claim(key, { effect: 'opaque' })).toMatchObject({ decision: { kind: 'replay' }, result: { id: 7 } });
    const mine = freshKey();
    const claimed = await ours.claim(mine, { effect: 'resumable' });
    await ours.complete(mine, claimed.fence!, 'ok');
    expect(await fixture.connect().hget(ours.redisKey(mine), 'status')).toBe('completed');
  });

  it('sends a script again by text after SCRIPT FLUSH, alone and in a batch', async () => {
    const store = new ReceiptStore({ redis: open(kind), prefix: `${fixture.handle().prefix}:flush-${kind}` });
    const [a, b] = [freshKey(), freshKey()];
    await store.claim(a, { effect: 'opaque' });
    await fixture.connect().script('FLUSH');
    // inspectRedisKeys goes out as one batch on a single node.
    const records = await store.inspectRedisKeys([store.redisKey(a), store.redisKey(b)]);
    expect(records.map((r) => r?.status ?? null)).toEqual(['running', null]);
    await fixture.connect().script('FLUSH');
    expect((await store.claim(b, { effect: 'opaque' })).decision).toEqual({ kind: 'execute', attempt: 1 });
  });
});

describe.skipIf(!faultTestsSupported()).each(CLIENT_KINDS)('a frozen server under %s', (kind) => {
  it("fails a claim with redis.timeout at the store's commandTimeoutMs, and releases it once the server wakes", async () => {
    const store = new ReceiptStore({ redis: open(kind), prefix: `${fixture.handle().prefix}:frozen-${kind}`, commandTimeoutMs: 300 });
    await store.claim(freshKey(), { effect: 'opaque' }); // connected, scripts loaded
    const key = freshKey();
    await fixture.handle().pause();
    const woken = new Promise<void>((resolve) => setTimeout(() => void fixture.handle().resume().then(resolve), 1_200));
    try {
      const error = await store.claim(key, { effect: 'opaque' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RedisTimeoutError);
      expect(error).toMatchObject({ code: 'redis.timeout', step: 'claim', sent: true, releases: [{ attempt: 1, outcome: 'released' }] });
      expect((error as Error).message).toContain('(no reply within 300 ms)');
      expect(await store.inspect(key)).toMatchObject({ status: 'failed', attempts: 1, tier: 'neverStarted' });
    } finally {
      await woken;
    }
  });
});

describe.each(['node-redis-6', 'node-redis-5'] as const)('a closed %s client', (kind) => {
  it('reads as a lost connection, not as a script error', async () => {
    const client = openSingle(kind, fixture.handle().url);
    const store = new ReceiptStore({ redis: client.client, prefix: `${fixture.handle().prefix}:closed-${kind}` });
    await store.claim(freshKey(), { effect: 'opaque' });
    await client.close();
    const error = await store.claim(freshKey(), { effect: 'opaque' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedisConnectionLostError);
    // Refused before it was queued: it never reached Redis, and there is nothing to release.
    expect(error).toMatchObject({ code: 'redis.unavailable', sent: false, releases: [] });
  });
});

const skipSentinel = sentinelSkipReason();
describe.skipIf(skipSentinel !== undefined)('on a Sentinel set', () => {
  let set: SentinelSetHandle;
  const clients: OpenedClient[] = [];
  beforeAll(async () => {
    set = await startSentinelSet();
  }, 90_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await set?.stop();
  });

  it.each(CLIENT_KINDS)('claims, completes and replays through %s, waits for the replica, and checks the master', async (kind) => {
    const client = openSentinel(kind, set.sentinels, SENTINEL_MASTER_NAME);
    clients.push(client);
    const store = new ReceiptStore({ redis: client.client, prefix: `${set.prefix}:${kind}`, durability: { replicas: 1, timeoutMs: 5000 } });
    const key = freshKey();
    const first = await store.claim(key, { effect: 'opaque' });
    expect(first.decision).toEqual({ kind: 'execute', attempt: 1 });
    await store.complete(key, first.fence!, 'sent');
    expect(await store.claim(key, { effect: 'opaque' })).toMatchObject({ decision: { kind: 'replay' }, result: 'sent' });
    const master = await set.master();
    const onMaster = await new ReceiptStore({ redis: fixture.connect(), prefix: store.prefix }).inspect(key);
    expect(onMaster).toBeNull(); // the fixture's server is not the Sentinel master: the receipt is only there
    const report = await checkRedisForReceipts(client.client, { durability: { replicas: 1 } });
    expect(report.findings.find((f) => f.check === 'replicas')).toMatchObject({ status: 'safe' });
    expect(master.port).toBeGreaterThan(0);
  });
});
