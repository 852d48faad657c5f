/**
 * release-lost-claim-3.lua releases exactly the attempt a lost claim
 * started, and nothing else; and a takeover (reclaim) whose reply is lost
 * is released by the claim that sent it once Redis answers again.
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { callRedisKeys } from '../../src/redis/keys.js';
import { parseObservation, ReceiptsChannel, type CommandSite } from '../../src/redis/receipts/channel.js';
import { claimRequest, runClaim } from '../../src/redis/receipts/transitions/claim.js';
import { runScript } from '../../src/redis/scripts/scripts.js';
import { RedisTimeoutError } from '../../src/redis/index.js';
import { keyspaceSettings } from '../../src/redis/settings.js';
import { faultTestsSupported } from '../support/redis.js';
import { freshKey, useRedis } from '../support/redis-fixture.js';

const fixture = useRedis();
const RETENTION = 60_000;

/** Sends release-lost-claim-3.lua for `key`'s receipt. */
async function release(redis: Redis, redisKeys: readonly string[], attempt: number, epoch: string, owner: string, token: string) {
  const keys = [redisKeys[0]!, redisKeys[1]!, redisKeys[3]!];
  return parseObservation(
    'release-lost-claim',
    await runScript(redis, 'release-lost-claim', keys, [attempt, epoch, owner, token, 'reply lost', RETENTION]),
  );
}

describe('release-lost-claim-3.lua', () => {
  it('settles as failed neverStarted only the attempt its own claim created, once', async () => {
    const store = fixture.store({ owner: 'w1' });
    const redis = fixture.connect();
    const key = freshKey();
    const keys = callRedisKeys(store.prefix, key);
    const fence = (await store.claim(key, { effect: 'opaque' })).fence!;

    // Nothing of anyone else's: another owner, another token, another attempt or lifetime.
    expect((await release(redis, keys, 1, fence.epoch, 'w2', fence.epoch)).code).toBe(0);
    expect((await release(redis, keys, 1, fence.epoch, 'w1', 'another-token')).code).toBe(0);
    expect((await release(redis, keys, 2, fence.epoch, 'w1', fence.epoch)).code).toBe(0);
    expect((await release(redis, keys, 1, 'another-epoch', 'w1', 'another-epoch')).code).toBe(0);
    expect(await store.inspect(key)).toMatchObject({ status: 'running', attempts: 1 });

    expect((await release(redis, keys, 1, fence.epoch, 'w1', fence.epoch)).code).toBe(1);
    expect(await store.inspect(key)).toMatchObject({ status: 'failed', attempts: 1, tier: 'neverStarted', error: 'reply lost' });
    // A later try of the same release finds it done (code 3) and writes nothing.
    expect((await release(redis, keys, 1, fence.epoch, 'w1', fence.epoch)).code).toBe(3);
    // The next claim runs the call as attempt 2.
    expect((await store.claim(key, { effect: 'opaque' })).decision).toEqual({ kind: 'execute', attempt: 2 });
  });

  it('never creates a receipt when the claim never landed', async () => {
    const store = fixture.store({ owner: 'w1' });
    const redis = fixture.connect();
    const key = freshKey();
    expect(await release(redis, callRedisKeys(store.prefix, key), 1, 'e', 'w1', 'e')).toMatchObject({ code: 0, status: null });
    expect(await store.inspect(key)).toBeNull();
  });

  it("releases a takeover by its claim token, never another worker's takeover under the same owner name", async () => {
    const store = fixture.store({ owner: 'shared-name' });
    const redis = fixture.connect();
    const key = freshKey();
    const keys = callRedisKeys(store.prefix, key);
    const first = (await store.claim(key, { effect: 'opaque' })).fence!;
    await store.fail(key, first, { error: 'nope', tier: 'neverStarted' });
    // A takeover by another worker that shares the owner name, with its own token.
    const reclaimed = parseObservation(
      'reclaim',
      await runScript(
        redis,
        'reclaim',
        [keys[0], keys[1], keys[3]],
        ['failed', 1, 10_000, RETENTION, 'shared-name', first.epoch, 'opaque', '', 'their-token'],
      ),
    );
    expect(reclaimed).toMatchObject({ code: 1, attempts: 2 });
    expect((await release(redis, keys, 2, first.epoch, 'shared-name', 'my-token')).code).toBe(0);
    expect(await store.inspect(key)).toMatchObject({ status: 'running', attempts: 2 });
    expect((await release(redis, keys, 2, first.epoch, 'shared-name', 'their-token')).code).toBe(1);
  });
});

describe.skipIf(!faultTestsSupported())('a takeover whose reply was lost', () => {
  it('is released by the claim that sent it once Redis answers again', async () => {
    const store = fixture.store({ owner: 'w1' });
    const key = freshKey();
    const first = (await store.claim(key, { effect: 'opaque' })).fence!;
    await store.fail(key, first, { error: 'rate limited', tier: 'neverStarted' });

    // A channel on a connection with commandTimeout that freezes Redis just as the takeover is sent.
    const redis = new Redis(fixture.handle().url, { commandTimeout: 300, maxRetriesPerRequest: 1 });
    await redis.ping();
    let froze = false;
    class FreezingChannel extends ReceiptsChannel {
      override async call(script: string, keys: readonly string[], args: readonly (string | number)[], site?: CommandSite) {
        if (script === 'reclaim' && !froze) {
          froze = true;
          await fixture.handle().pause();
          setTimeout(() => void fixture.handle().resume(), 1_200);
        }
        return super.call(script, keys, args, site);
      }
    }
    const settings = keyspaceSettings({ prefix: store.prefix, retentionMs: RETENTION, owner: 'w1', groupCommit: false });
    const channel = new FreezingChannel(redis, settings, 'the test');
    const request = claimRequest(key, callRedisKeys(store.prefix, key), { effect: 'opaque' }, { ...settings, leaseMs: 10_000 });
    const error = await runClaim(channel, request, false, Promise.resolve()).catch((e: unknown) => e);
    try {
      expect(error).toBeInstanceOf(RedisTimeoutError);
      expect(error).toMatchObject({ step: 'reclaim', releases: [{ attempt: 2, outcome: 'released' }] });
      expect(await store.inspect(key)).toMatchObject({ status: 'failed', attempts: 2, tier: 'neverStarted' });
      expect(await store.listAmbiguous()).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });
});
