/**
 * Durability when Redis itself stops answering, not just the replicas: a
 * primary frozen (SIGSTOP) right after a claim's reply, so the claim's WAIT
 * gets no reply within the store's deadline, must refuse the claim as not
 * acknowledged (typed, retryable) and settle its attempt as never started
 * once Redis answers again, never leave it running to read as ambiguous.
 * And with `aof`, a WAITAOF support check cut off the same way must not be
 * remembered: the next write asks the server again.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReceiptStore } from '../../src/redis/index.js';
import { hasWaitAof } from '../../src/redis/durability/durability.js';
import { freshKey, waitUntil } from '../support/redis-fixture.js';
import type { LocalRedis } from '../support/redis-process.js';
import { startPrimaryWithReplica } from '../support/redis-cluster.js';
import { uniquePrefix } from '../support/redis.js';
import { sentinelSkipReason } from '../support/redis-sentinel.js';

const skip = sentinelSkipReason();

/** How long the primary stays frozen: well past the claim's WAIT deadline (commandTimeoutMs + timeoutMs). */
const FROZEN_MS = 1500;

type SentCommand = { name: string };

/** Calls `before` with each command `redis` is about to send (ioredis' own hook, as test/support/sent-commands.ts uses). */
function beforeEachCommand(redis: Redis, before: (command: SentCommand) => void): void {
  const original = redis.sendCommand;
  redis.sendCommand = ((command: SentCommand, stream?: unknown) => {
    before(command);
    return (original as (c: unknown, s?: unknown) => unknown).call(redis, command, stream);
  }) as typeof redis.sendCommand;
}

describe.skipIf(skip !== undefined)('a WAIT or WAITAOF check that Redis does not answer', () => {
  let primary: LocalRedis;
  let replica: LocalRedis;
  const clients: Redis[] = [];
  const prefix = uniquePrefix();
  beforeAll(async () => {
    ({ primary, replica } = await startPrimaryWithReplica(prefix, { appendonly: true }));
  });
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await primary?.resume().catch(() => undefined);
    await replica?.stop();
    await primary?.stop();
  });
  const connect = async () => {
    const redis = new Redis(primary.url, { maxRetriesPerRequest: 1 });
    clients.push(redis);
    await redis.ping();
    return redis;
  };

  /** Freezes the primary now, and lets it go on after {@link FROZEN_MS}. */
  const freezeForAWhile = () => {
    void primary.pause();
    setTimeout(() => void primary.resume(), FROZEN_MS);
  };

  it('refuses the claim as not acknowledged and settles its attempt as never started', async () => {
    const redis = await connect();
    const store = new ReceiptStore({ redis, prefix, commandTimeoutMs: 200, durability: { replicas: 1, timeoutMs: 500 } });
    const key = freshKey();
    let frozen = false;
    // The claim's reply has arrived when its WAIT goes out: freeze the primary before the WAIT reaches it.
    beforeEachCommand(redis, (command) => {
      if (command.name !== 'wait' || frozen) return;
      frozen = true;
      freezeForAWhile();
    });

    const error = await store.claim(key, { effect: 'opaque' }).catch((e: unknown) => e);
    expect(frozen).toBe(true);
    expect(error).toMatchObject({ code: 'durability.not_acknowledged', write: 'claim' });
    expect((error as Error).cause).toBeInstanceOf(Error);

    // Once the primary answers again, the attempt is settled: its effect never started.
    const record = await waitUntil(
      () => store.inspect(key).catch(() => null),
      (r) => r?.status === 'failed',
      20_000,
      'the attempt to be settled',
    );
    expect(record).toMatchObject({ status: 'failed', attempts: 1, tier: 'neverStarted' });
    const again = await store.claim(key, { effect: 'opaque' });
    expect(again.decision).toEqual({ kind: 'execute', attempt: 2 });
  });

  it('asks again whether the server has WAITAOF after a check that got no answer', async () => {
    const redis = await connect();
    const store = new ReceiptStore({ redis, prefix, commandTimeoutMs: 200, durability: { replicas: 1, timeoutMs: 500, aof: true } });
    const key = freshKey();
    freezeForAWhile();
    const first = await store.claim(key, { effect: 'opaque' }).catch((e: unknown) => e);
    expect(first).toMatchObject({ code: 'redis.timeout' });

    // Wait until the primary answers again (its queued commands included) before the second claim.
    await waitUntil(
      () => redis.ping().catch(() => ''),
      (pong) => pong === 'PONG',
      20_000,
      'the primary to answer',
    );
    const second = store.claim(key, { effect: 'opaque' });
    if (await hasWaitAof(redis)) {
      await expect(second).resolves.toMatchObject({ decision: { kind: 'execute', attempt: 1 } });
    } else {
      await expect(second).rejects.toMatchObject({ code: 'durability.unsupported' });
    }
  });
});
