/**
 * The previous release beside receipts in an approval state (layout 3, in a
 * status it does not know): it predates numbered layouts, so its store
 * refuses each one as `receipt.corrupt` (the status is not one of its own)
 * and writes nothing; once an approved call has started (layout 2 again) it
 * reads it as any running receipt.
 */
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { approveCall, denyCall, listPendingApprovals } from '../../src/approvals/index.js';
import { toolCallArgsHash } from '../../src/core/index.js';
import { ReceiptsKeyspace, ReceiptStore } from '../../src/redis/index.js';
import { ApprovalGate } from '../../src/approvals/gate.js';
import { previousRelease, type PreviousRelease } from '../support/previous-release.js';
import { startRedis, type RedisHandle } from '../support/redis.js';

type RedisModule = typeof import('../../src/redis/index.js');

let release: PreviousRelease;
let server: RedisHandle;
let redis: Redis;

beforeAll(async () => {
  [release, server] = await Promise.all([previousRelease(), startRedis()]);
  redis = new Redis(server.url, { maxRetriesPerRequest: 3 });
}, 180_000);

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

it('the previous release refuses awaiting, approved and denied receipts, writing nothing, and reads a started one', async () => {
  const old = (await import(pathToFileURL(release.redisEntry).href)) as RedisModule;
  const prefix = `${server.prefix}appr`;
  // Layout 2's approval states (3): the layout this release writes beside an earlier one (docs/upgrading.md).
  const gate = new ApprovalGate(ReceiptsKeyspace.open({ redis, prefix, retentionMs: 60_000, receiptLayout: 2 }).channel);
  const oldStore = new old.ReceiptStore({ redis, prefix });
  const store = new ReceiptStore({ redis, prefix });
  const keyOf = async (n: number) => ({ tenantId: 'acme', runId: 'run-1', toolName: 'refund', argsHash: await toolCallArgsHash({ n }) });
  const ask = async (n: number) => {
    const key = await keyOf(n);
    await gate.pass({ key, needed: {}, effect: 'opaque', timeoutMs: 60_000, shown: '', job: undefined }, () => undefined);
    return key;
  };
  const [awaiting, approved, denied] = [await ask(1), await ask(2), await ask(3)];
  for (const pending of await listPendingApprovals({ redis, prefix })) {
    if (pending.argsHash === approved.argsHash) await approveCall({ redis, prefix, ...pending, actor: 'ana' });
    if (pending.argsHash === denied.argsHash) await denyCall({ redis, prefix, ...pending, actor: 'bo' });
  }
  for (const key of [awaiting, approved, denied]) {
    const redisKey = store.redisKey(key);
    const before = await redis.hgetall(redisKey);
    expect(before['schema']).toBe('3');
    const refused = await oldStore.claim(key, { effect: 'opaque' }).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'receipt.corrupt', why: 'status is not running, completed or failed' });
    expect(await redis.hgetall(redisKey)).toEqual(before);
  }
  // This release's claim starts the approved call: an ordinary running receipt the previous release reads.
  const started = await store.claim(approved, { effect: 'opaque' });
  expect(started.decision).toEqual({ kind: 'execute', attempt: 1 });
  expect(await redis.hget(store.redisKey(approved), 'schema')).toBe('2');
  const seen = await oldStore.claim(approved, { effect: 'opaque' });
  expect(seen.decision.kind).toBe('wait');
}, 120_000);
