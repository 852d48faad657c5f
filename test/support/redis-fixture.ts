/**
 * Shared setup for tests of the Redis stores and of the CLI on them: one
 * server per file, a connection factory that closes what it opened, stores
 * under the file's prefix, and polling on observable state.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import type { ToolCallReceiptKey } from '../../src/core/identity.js';
import type { AttemptFence } from '../../src/redis/errors.js';
import { runIndexEntry } from '../../src/redis/keys.js';
import { ReceiptStore, type ClaimOptions, type ClaimResult, type ReceiptStoreOptions } from '../../src/redis/receipts/store.js';
import type { RedisConnection } from '../../src/redis/connection/connection.js';
import { clientKindUnderTest, openSingle, type OpenedClient } from './redis-clients.js';
import { startRedis, type RedisHandle } from './redis.js';

export interface RedisFixture {
  readonly handle: () => RedisHandle;
  /** A new ioredis connection, closed after the file's tests: for the test's own reads and writes. */
  connect(): Redis;
  /**
   * A new connection of the client under test (`TEST_REDIS_CLIENT`: ioredis
   * 5 or 6, node-redis 6 or 5), closed after the file's tests: hand it to
   * the stores under test.
   */
  client(): RedisConnection;
  /** A store on a new {@link client}, under the file's unique prefix unless told otherwise. */
  store(options?: Partial<Omit<ReceiptStoreOptions, 'redis'>>): ReceiptStore;
}

/** Starts one Redis server for the calling test file and stops it afterwards. */
export function useRedis(): RedisFixture {
  let handle: RedisHandle | undefined;
  const connections: Redis[] = [];
  const clients: OpenedClient[] = [];
  beforeAll(async () => {
    handle = await startRedis();
  });
  afterAll(async () => {
    await Promise.all(connections.splice(0).map((c) => c.quit().catch(() => c.disconnect())));
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await handle?.stop();
  });
  const fixture: RedisFixture = {
    handle: () => {
      if (!handle) throw new Error('redis not started yet');
      return handle;
    },
    connect() {
      const connection = new Redis(fixture.handle().url, { maxRetriesPerRequest: 3 });
      connections.push(connection);
      return connection;
    },
    client() {
      const opened = openSingle(clientKindUnderTest(), fixture.handle().url);
      clients.push(opened);
      return opened.client;
    },
    store(options = {}) {
      return new ReceiptStore({ prefix: fixture.handle().prefix, ...options, redis: fixture.client() });
    },
  };
  return fixture;
}

/** A key no other test uses. */
export function freshKey(overrides: Partial<ToolCallReceiptKey> = {}): ToolCallReceiptKey {
  const id = randomBytes(6).toString('hex');
  return { tenantId: `tenant-${id}`, runId: `run-${id}`, toolName: 'send_email', argsHash: `h${id}`, ...overrides };
}

/**
 * Polls `read` until `done` holds for its value, then returns the value.
 * Fails after `timeoutMs`; the timeout is a generous bound, never a measurement.
 */
export async function waitUntil<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}: last value ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Waits until the receipt's lease has run out by the server clock. */
export async function waitForLeaseExpiry(store: ReceiptStore, key: ToolCallReceiptKey): Promise<void> {
  await waitUntil(
    () => store.inspect(key),
    (record) => record !== null && record.status === 'running' && record.leaseExpired,
    10_000,
    'the lease to expire on the server clock',
  );
}

/**
 * Claims `key` and returns the fence of the attempt the claim started;
 * fails the test when the claim decided anything but execute.
 */
export async function claimFence(store: ReceiptStore, key: ToolCallReceiptKey, options: ClaimOptions): Promise<AttemptFence> {
  const claim = await store.claim(key, options);
  if (claim.fence === undefined) throw new Error(`expected the claim to execute, got ${claim.decision.kind}`);
  return claim.fence;
}

/** What a claim decided, without the fields that differ from one claim to the next (epochs, clocks). */
export const claimDecision = (claim: ClaimResult) => ({
  decision: claim.decision,
  state: claim.state,
  effect: claim.effect,
  attempt: claim.attempt,
  result: claim.result,
  toolRemoval: claim.toolRemoval,
  rejectionStreak: claim.rejectionStreak,
  waits: claim.leaseRemainingMs !== undefined && claim.leaseRemainingMs > 0 && claim.decision.kind === 'wait',
});

/**
 * The entry `store`'s run index lists `key` by: the compact member of a
 * layout-5 receipt, the receipt key of an earlier layout (read from the
 * receipt's `schema` field; see `runIndexEntry`).
 */
export async function runIndexEntryOf(redis: Redis, store: ReceiptStore, key: ToolCallReceiptKey): Promise<string> {
  const schema = await redis.hget(store.redisKey(key), 'schema');
  return runIndexEntry(store.redisKey(key), Number(schema ?? 1));
}
