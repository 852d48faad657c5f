/**
 * Receipt layouts. A claim writes this release's layout number; a receipt an
 * earlier release wrote (no `schema` field) is read and used as before; a
 * receipt a newer release wrote is refused by every operation and reader with
 * `receipt.version`, naming the key and both layouts, and nothing is written:
 * reading it as this release's layout could misreport it.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ToolCallReceiptKey } from '../../src/core/identity.js';
import {
  COMPACT_RECEIPT_SCHEMA,
  LEAN_RECEIPT_SCHEMA,
  ORDINARY_RECEIPT_SCHEMA,
  RECEIPT_SCHEMA_VERSION,
  ReceiptVersionError,
} from '../../src/redis/errors.js';
import type { ReceiptStore } from '../../src/redis/receipts/store.js';
import { ReconcileStore } from '../../src/redis/receipts/transitions/reconcile-store.js';
import { ambiguousCommand } from '../../src/cli/commands/ambiguous.js';
import { runCommand } from '../../src/cli/commands/run.js';
import { showCommand } from '../../src/cli/commands/show.js';
import { Capture, spawnCli } from '../cli/support.js';
import { claimFence, freshKey, useRedis, waitForLeaseExpiry } from '../support/redis-fixture.js';
import { receiptOperations, type StoreOperation } from '../support/store-operations.js';

const fixture = useRedis();
const NEWER = RECEIPT_SCHEMA_VERSION + 1;
const fence = { attempt: 1, epoch: 'e' };
const reconciles = (store: ReceiptStore): ReconcileStore => new ReconcileStore({ redis: fixture.connect(), prefix: store.prefix });

describe('the layout a receipt carries', () => {
  it('the scripts and the TypeScript readers know the same layout', () => {
    const include = readFileSync(new URL('../../lua/includes/observe-receipt.lua', import.meta.url), 'utf8');
    const layouts =
      /^local RECEIPT_SCHEMA, STATE_SCHEMA, LEAN_SCHEMA, COMPACT_SCHEMA, NEWEST_SCHEMA, LEAN_TEXT, COMPACT_TEXT = (\d+), (\d+), (\d+), (\d+), (\d+), '(\d+)', '(\d+)'$/m.exec(
        include,
      );
    expect(Number(layouts?.[1])).toBe(ORDINARY_RECEIPT_SCHEMA);
    expect(Number(layouts?.[5])).toBe(RECEIPT_SCHEMA_VERSION);
    expect(Number(layouts?.[3])).toBe(LEAN_RECEIPT_SCHEMA);
    expect(Number(layouts?.[4])).toBe(COMPACT_RECEIPT_SCHEMA);
    expect(layouts?.[6]).toBe(layouts?.[3]);
    expect(layouts?.[7]).toBe(layouts?.[4]);
    expect(ORDINARY_RECEIPT_SCHEMA).toBe(2);
    expect(RECEIPT_SCHEMA_VERSION).toBeGreaterThan(ORDINARY_RECEIPT_SCHEMA);
  });

  it.each([
    ['by default', undefined, COMPACT_RECEIPT_SCHEMA],
    ['with receiptLayout: 2', 2, ORDINARY_RECEIPT_SCHEMA],
  ] as const)('a claim that creates a receipt writes its layout (%s), and a read reports it', async (_, receiptLayout, schema) => {
    const store = fixture.store(receiptLayout === undefined ? {} : { receiptLayout });
    const redis = fixture.connect();
    const key = freshKey();
    await store.claim(key, { effect: 'opaque' });
    expect(await redis.hget(store.redisKey(key), 'schema')).toBe(String(schema));
    expect(await store.inspect(key)).toMatchObject({ status: 'running', schema });
  });

  it('a receipt in the newest layout is read and settled, and a takeover keeps its layout instead of lowering it', async () => {
    const store = fixture.store();
    const redis = fixture.connect();
    const key = freshKey();
    await claimFence(store, key, { effect: 'resumable', leaseMs: 60 });
    await redis.hset(store.redisKey(key), 'schema', String(RECEIPT_SCHEMA_VERSION));
    expect(await store.inspect(key)).toMatchObject({ status: 'running', schema: RECEIPT_SCHEMA_VERSION });
    await waitForLeaseExpiry(store, key);
    const second = await store.claim(key, { effect: 'resumable' });
    expect(second.decision.kind).toBe('execute');
    expect(await redis.hget(store.redisKey(key), 'schema')).toBe(String(RECEIPT_SCHEMA_VERSION));
    await store.complete(key, second.fence!, 'done');
    expect(await store.inspect(key)).toMatchObject({ status: 'completed', attempts: 2, schema: RECEIPT_SCHEMA_VERSION });
  });

  it('a receipt an earlier release wrote (no schema field) reads as layout 1, settles as before, and a reclaim moves it to this layout', async () => {
    const store = fixture.store();
    const redis = fixture.connect();
    const key = freshKey();
    const fence1 = await claimFence(store, key, { effect: 'resumable', leaseMs: 60 });
    await store.recordStep(key, fence1, 'reserve', { ticket: 7 });
    await redis.hdel(store.redisKey(key), 'schema');
    expect(await store.inspect(key)).toMatchObject({ status: 'running', attempts: 1, schema: 1, steps: { reserve: { ticket: 7 } } });

    await waitForLeaseExpiry(store, key);
    const second = await store.claim(key, { effect: 'resumable' });
    expect(second.decision.kind).toBe('execute');
    expect(second.attempt).toBe(2);
    expect(await redis.hget(store.redisKey(key), 'schema')).toBe(String(ORDINARY_RECEIPT_SCHEMA));
    await store.complete(key, second.fence!, { sent: true });
    expect(await store.inspect(key)).toMatchObject({
      status: 'completed',
      attempts: 2,
      result: { sent: true },
      schema: ORDINARY_RECEIPT_SCHEMA,
    });

    const other = freshKey();
    const claimed = await claimFence(store, other, { effect: 'opaque' });
    await redis.hdel(store.redisKey(other), 'schema');
    await store.complete(other, claimed, 'done');
    expect(await store.inspect(other)).toMatchObject({ status: 'completed', result: 'done', schema: 1 });
    expect(await redis.hexists(store.redisKey(other), 'schema')).toBe(0);
    expect((await store.stats({ tenantId: other.tenantId })).byStatus.completed).toBe(1);
    expect((await store.stats({ tenantId: other.tenantId, scan: true })).byStatus.completed).toBe(1);
  });

  it.each(['abc', '0', '2.5', ''])(
    'a schema field that is not a whole number >= 1 (%j) is corrupt, for the scripts and the readers',
    async (value) => {
      const store = fixture.store();
      const redis = fixture.connect();
      const key = freshKey();
      await store.claim(key, { effect: 'opaque' });
      await redis.hset(store.redisKey(key), 'schema', value);
      await expect(store.inspect(key)).rejects.toMatchObject({ code: 'receipt.corrupt', why: 'schema is not a whole number >= 1' });
      await expect(store.claim(key, { effect: 'opaque' })).rejects.toMatchObject({
        code: 'receipt.corrupt',
        why: 'schema is not a whole number >= 1',
      });
    },
  );
});

/** A receipt as a newer release might leave it: a state and a field this release does not know. */
async function writtenByNewerRelease(
  store: ReceiptStore,
  redis: ReturnType<typeof fixture.connect>,
  key: ToolCallReceiptKey,
  status: string,
) {
  const redisKey = store.redisKey(key);
  await redis.hset(redisKey, {
    tenant: key.tenantId,
    run: key.runId,
    tool: key.toolName,
    args_hash: key.argsHash,
    status,
    attempts: '1',
    epoch: 'e',
    effect: 'opaque',
    lease_until_ms: '1',
    created_ms: '1',
    updated_ms: '1',
    schema: String(NEWER),
    paused_until_ms: '99',
  });
  await redis.zadd(store.runIndexKey(key.tenantId, key.runId), 1, redisKey);
  return redisKey;
}

const operations: StoreOperation[] = [
  ...receiptOperations(fence, reconciles),
  // The readers that walk more than one receipt.
  ['listRun', (s, k) => s.listRun(k.tenantId, k.runId)],
  ['listAmbiguous without onNewer', (s) => s.listAmbiguous()],
  ['stats by scan', (s, k) => s.stats({ tenantId: k.tenantId, scan: true })],
  ['rebuildCounts', (s, k) => s.rebuildCounts({ tenantId: k.tenantId })],
];

describe.each(operations)('%s on a receipt a newer release wrote', (_name, operation) => {
  it.each(['running', 'paused'])('status %s: receipt.version naming the key and both layouts, nothing written', async (status) => {
    // Each test its own prefix: listAmbiguous and the scan walk the whole server.
    const store = fixture.store({ prefix: `v${Math.random().toString(36).slice(2, 8)}` });
    const redis = fixture.connect();
    const key = freshKey();
    const redisKey = await writtenByNewerRelease(store, redis, key, status);
    const before = await redis.hgetall(redisKey);
    const indexBefore = await redis.zrange(store.runIndexKey(key.tenantId, key.runId), 0, -1, 'WITHSCORES');

    const error = await operation(store, key).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ReceiptVersionError);
    expect(error).toMatchObject({ code: 'receipt.version', redisKey, foundVersion: NEWER, supportedVersion: RECEIPT_SCHEMA_VERSION });
    expect((error as Error).message).toContain(`receipt schema ${NEWER}; this release reads up to ${RECEIPT_SCHEMA_VERSION}`);
    expect(await redis.hgetall(redisKey)).toEqual(before);
    expect(await redis.zrange(store.runIndexKey(key.tenantId, key.runId), 0, -1, 'WITHSCORES')).toEqual(indexBefore);
    expect(await redis.exists(`${store.prefix}:cnt:{${key.tenantId}|${key.runId}}`)).toBe(0);
  });
});

describe('the CLI on a receipt a newer release wrote', () => {
  it('show and run refuse it with receipt.version; ambiguous skips it with a line naming it and lists the rest', async () => {
    const store = fixture.store({ prefix: 'vcli' });
    const redis = fixture.connect();
    const key = freshKey();
    const redisKey = await writtenByNewerRelease(store, redis, key, 'running');
    const before = await redis.hgetall(redisKey);

    await expect(showCommand({ store, redis, out: new Capture(), args: { redisKey, json: false } })).rejects.toMatchObject({
      code: 'receipt.version',
      redisKey,
    });
    await expect(
      runCommand({ store, redis, out: new Capture(), args: { tenantId: key.tenantId, runId: key.runId, json: false } }),
    ).rejects.toMatchObject({ code: 'receipt.version', redisKey });

    // An ambiguous receipt of this release beside it is still listed.
    const mine = freshKey();
    await store.claim(mine, { effect: 'opaque', leaseMs: 60 });
    await waitForLeaseExpiry(store, mine);
    const out = new Capture();
    await ambiguousCommand({ store, redis, out, args: { json: false } });
    expect(out.text).toContain(
      `Skipped a receipt a newer release wrote: ${redisKey} (schema ${NEWER}; this release reads up to ${RECEIPT_SCHEMA_VERSION})`,
    );
    expect(out.text).toContain(store.redisKey(mine));
    expect(out.text).toContain('1 ambiguous receipt.');
    const listed = await store.listAmbiguous({ onNewer: () => undefined });
    expect(listed.map((r) => r.redisKey)).toEqual([store.redisKey(mine)]);

    // The real command line: one sentence, the code in --json, exit 1.
    const shown = await spawnCli(['show', redisKey, '--json', '--prefix', store.prefix], fixture.handle().url);
    expect(shown.code).toBe(1);
    expect(JSON.parse(shown.stderr)).toMatchObject({ error: { code: 'receipt.version' } });
    expect(await redis.hgetall(redisKey)).toEqual(before);
  });
});
