/**
 * Receipt layouts 4 and 5 (`receiptLayout: 4`, `receiptLayout: 5`): the
 * receipts a keyspace creates carry no `tenant`, `run`, `tool` or
 * `args_hash` field, since their key names them; layout 5 also lists them
 * in their run's sorted sets by a short member and keeps a long result in
 * parts, so that at the server's default listpack limits the hash and both
 * sets stay listpacks. The same calls are run through a layout-2 store and
 * a layout-4 or 5 store, and every read (inspect, listRun, listAmbiguous,
 * stats, the pending approvals, `show`, the console's page, the resume
 * journal) must give the same answer; the layout-4 and 5 hashes must hold
 * none of the four fields. A receipt keeps its own layout whichever store
 * meets it next.
 */
import { describe, expect, it } from 'vitest';
import type { ToolCallReceiptKey } from '../../src/core/identity.js';
import { ApprovalGate } from '../../src/approvals/gate.js';
import { ApprovalArgsMismatchError, approveCall, listPendingApprovals, readApproval } from '../../src/approvals/index.js';
import { showCommand } from '../../src/cli/commands/show.js';
import { receiptPageView } from '../../src/console/pages/receipt.js';
import { sha256Digest } from '../../src/core/identity.js';
import { journalFromReceipts } from '../../src/core/journal.js';
import {
  COMPACT_RECEIPT_SCHEMA,
  LEAN_RECEIPT_SCHEMA,
  ORDINARY_RECEIPT_SCHEMA,
  ReceiptsKeyspace,
  type ReceiptLayout,
  type ReceiptRecord,
} from '../../src/redis/index.js';
import type { ReceiptStore } from '../../src/redis/receipts/store.js';
import { callMember, receiptCountRedisKey } from '../../src/redis/keys.js';
import { Capture } from '../cli/support.js';
import { claimFence, freshKey, useRedis, waitForLeaseExpiry, waitUntil } from '../support/redis-fixture.js';

const fixture = useRedis();
const KEY_FIELDS = ['tenant', 'run', 'tool', 'args_hash'] as const;
const OWNER = 'worker-a';

/** Calls whose every name needs percent-encoding in the key. */
function awkwardKey(tool: string, hash: string, id = freshKey().runId): ToolCallReceiptKey {
  return { tenantId: `acme {eu}|${id}`, runId: `run: ${id} 100%`, toolName: `${tool} ü`, argsHash: `${hash} {x}:%` };
}

/** A read with what differs from one store to the other taken out: times, epochs, the prefix, the layout number. */
function comparable(value: unknown, prefix: string): unknown {
  return JSON.parse(
    JSON.stringify(value, (name, v: unknown) => {
      if (typeof v === 'number' && /Ms$/.test(name)) return 'ms';
      if (name === 'epoch' && typeof v === 'string') return v === '' ? '' : 'epoch';
      if (name === 'schema') return 'layout';
      if (typeof v === 'string' && v.startsWith(prefix)) return `<prefix>${v.slice(prefix.length)}`;
      return v;
    }),
  );
}

/** The receipt's hash, and whether it holds any of the key fields. */
async function storedFields(store: ReceiptStore, key: ToolCallReceiptKey): Promise<{ schema?: string; keyFields: string[] }> {
  const hash = await fixture.connect().hgetall(store.redisKey(key));
  return { schema: hash['schema'], keyFields: KEY_FIELDS.filter((f) => f in hash) };
}

/** What `show` and the console's receipt page print of the call's names. */
async function shownNames(store: ReceiptStore, record: ReceiptRecord): Promise<{ cli: string[]; console: string[] }> {
  const out = new Capture();
  await showCommand({ store, redis: fixture.connect(), out, args: { redisKey: record.redisKey, json: false } });
  const cli = out.lines.filter((line) => /^\s*(tenant|run|tool|args hash|idempotency key)\b/.test(line)).map((l) => l.trim());
  const view = receiptPageView({ base: '', role: 'read', csrf: 'x', prefix: store.prefix }, record).text;
  const rows = [...view.matchAll(/<tr><th>(Tenant|Run|Tool|Args hash|Idempotency key)<\/th><td[^>]*>(.*?)<\/td><\/tr>/g)];
  return { cli, console: rows.map((m) => `${m[1]}: ${m[2]}`) };
}

/**
 * The same calls through one store: create, replay, fail and run again,
 * a takeover after the lease, an ambiguous call resolved, a group claim, a
 * complete that claims the next call, claims batched by group commit, a
 * transactional call, and an
 * approval (gate, a refused and an accepted decision, the start). Returns
 * every read, comparable across stores; checks each hash's layout on the way.
 */
async function scenario(layout: ReceiptLayout, tag: string, id: string) {
  const prefix = `${fixture.handle().prefix}${tag}:`;
  const keyspace = ReceiptsKeyspace.open({ redis: fixture.client(), prefix, owner: OWNER, receiptLayout: layout });
  const store = keyspace.receipts;
  const expectLayout = async (key: ToolCallReceiptKey, schema: number) =>
    expect(await storedFields(store, key)).toEqual({ schema: String(schema), keyFields: layout === 2 ? [...KEY_FIELDS] : [] });
  // The layout this store creates an ordinary receipt in, and a transactional or approval one.
  const ordinarySchema = layout === 4 ? LEAN_RECEIPT_SCHEMA : layout === 5 ? COMPACT_RECEIPT_SCHEMA : ORDINARY_RECEIPT_SCHEMA;
  const stateSchema = layout === 2 ? 3 : ordinarySchema;
  const reads: unknown[] = [];
  const read = async (key: ToolCallReceiptKey) => reads.push(await store.inspect(key));
  const calls = ['done', 'failed', 'taken', 'lost', 'g1', 'g2', 'next', 'txn', 'gated'].map((name) => awkwardKey(`t-${name}`, name, id));
  const sameRun = (k: ToolCallReceiptKey) => ({ ...k, tenantId: calls[0]!.tenantId, runId: calls[0]!.runId });
  const [done, failed, taken, lost, g1, g2, next, txn, gated] = calls.map(sameRun) as ToolCallReceiptKey[];

  // Create, complete, replay.
  const first = await store.claim(done!, { effect: 'opaque' });
  reads.push(first.decision);
  await expectLayout(done!, ordinarySchema);
  await store.complete(done!, first.fence!, { sent: 'yes' });
  reads.push((await store.claim(done!, { effect: 'opaque' })).result);
  await read(done!);

  // Fail, and the next claim runs it again as attempt 2.
  await store.fail(failed!, await claimFence(store, failed!, { effect: 'opaque' }), { error: 'smtp 500', tier: 'execution' });
  await read(failed!);
  const again = await store.claim(failed!, { effect: 'opaque' });
  reads.push(again.decision);
  await expectLayout(failed!, ordinarySchema);

  // A lease that lapses: a resumable call is taken over; an opaque one is ambiguous and resolved.
  await claimFence(store, taken!, { effect: 'resumable', leaseMs: 40 });
  await claimFence(store, lost!, { effect: 'opaque', leaseMs: 40 });
  await waitForLeaseExpiry(store, taken!);
  await waitForLeaseExpiry(store, lost!);
  reads.push((await store.claim(taken!, { effect: 'resumable' })).decision);
  await expectLayout(taken!, ordinarySchema);
  reads.push((await store.claim(lost!, { effect: 'opaque' })).decision);
  const ambiguous = await store.listAmbiguous();
  reads.push(ambiguous);
  const [seen] = ambiguous;
  await store.resolve(seen!.key, { attemptsSeen: seen!.attempts, epochSeen: seen!.epoch, outcome: 'completed', result: 'by hand' });
  reads.push((await store.claim(lost!, { effect: 'opaque' })).result);

  // A group claim, and a complete that claims the next call in the same round trip.
  const group = await store.claimGroup([
    { key: g1!, options: { effect: 'opaque' } },
    { key: g2!, options: { effect: 'opaque' } },
  ]);
  const grouped = await Promise.all([g1!, g2!].map((k, i) => store.claim(k, { effect: 'opaque' }, group[i] ?? undefined)));
  reads.push(grouped.map((c) => c.decision));
  const chained = await store.completeAndClaim(g1!, grouped[0]!.fence!, 'g1 done', { key: next!, options: { effect: 'opaque' } });
  reads.push(chained.settled, (await store.claim(next!, { effect: 'opaque' }, chained.ahead ?? undefined)).decision);
  for (const key of [g1!, g2!, next!]) await expectLayout(key, ordinarySchema);

  // Claims in flight together go out as one group commit batch (commit-batch-N.lua).
  const batched = ['b1', 'b2', 'b3', 'b4'].map((name) => sameRun(awkwardKey(`t-${name}`, name, id)));
  const batchesBefore = store.groupCommitted.batches;
  reads.push((await Promise.all(batched.map((k) => store.claim(k, { effect: 'opaque' })))).map((c) => c.decision));
  expect(store.groupCommitted.batches).toBeGreaterThan(batchesBefore);
  for (const key of batched) await expectLayout(key, ordinarySchema);

  // A transactional call: layout 3 by default, 4 (which includes what 3 means) when the keyspace asks.
  reads.push((await store.claim(txn!, { effect: 'transactional' })).decision);
  await expectLayout(txn!, stateSchema);

  // An approval: the gate, the pending listing, a decision naming the wrong digest (even the key's encoded
  // form of the right one) refused, the raw digest accepted, and the claim that starts it.
  const gate = new ApprovalGate(keyspace.channel);
  reads.push(
    await gate.pass(
      { key: gated!, needed: { reason: 'big' }, effect: 'opaque', timeoutMs: 60_000, shown: '', job: undefined },
      () => undefined,
    ),
  );
  await expectLayout(gated!, stateSchema);
  const [pending] = await listPendingApprovals({ redis: fixture.client(), prefix });
  expect(pending).toMatchObject({ ...gated!, receiptKey: store.redisKey(gated!) });
  reads.push(pending, await readApproval({ redis: fixture.client(), prefix, receiptKey: pending!.receiptKey }));
  const encodedDigest = store.redisKey(gated!).slice(store.redisKey(gated!).lastIndexOf(':') + 1);
  expect(encodedDigest).not.toBe(gated!.argsHash);
  for (const argsHash of ['not-the-digest', encodedDigest]) {
    await expect(approveCall({ redis: fixture.client(), prefix, ...pending!, argsHash, actor: 'ana' })).rejects.toBeInstanceOf(
      ApprovalArgsMismatchError,
    );
  }
  reads.push(await store.inspect(gated!));
  await approveCall({ redis: fixture.client(), prefix, ...pending!, actor: 'ana' });
  const started = await store.claim(gated!, { effect: 'opaque' });
  reads.push(started.decision);
  // Started, an approved call is an ordinary receipt again: layout 2, or still 4 or 5 (it has no key fields to be 2 with).
  await expectLayout(gated!, ordinarySchema);
  await store.complete(gated!, started.fence!, 'refunded');
  await read(gated!);

  // Calls named by the default digest (64 hex digits: the compact member writes them as base64url), with
  // results of one short field, of several parts (multi-byte characters across the cuts), and too long for parts.
  const digest = (text: string) => sha256Digest(text) as string;
  const results = ['short', `${'é'.repeat(30)}${'€'.repeat(40)}${'x'.repeat(95)}`, 'y'.repeat(3000)];
  const redis = fixture.connect();
  for (const [i, result] of results.entries()) {
    const call = sameRun({ ...awkwardKey('t-hex', 'h', id), argsHash: digest(`hex-${i}`) });
    await store.complete(call, await claimFence(store, call, { effect: 'opaque' }), { text: result });
    await expectLayout(call, ordinarySchema);
    reads.push((await store.claim(call, { effect: 'opaque' })).result);
    await read(call);
    // Layout 5 keeps a completed receipt's hash a listpack unless its result is too long for parts.
    const compact = layout === 5 && i < 2;
    expect(await redis.object('ENCODING', store.redisKey(call))).toBe(compact || i === 0 ? 'listpack' : 'hashtable');
  }
  // A verdict's result is kept in parts too: each at most 64 bytes, so the hash stays a listpack.
  const resolved = sameRun({ ...awkwardKey('t-hex', 'h', id), argsHash: digest('resolved') });
  await claimFence(store, resolved, { effect: 'opaque', leaseMs: 40 });
  await waitForLeaseExpiry(store, resolved);
  reads.push((await store.claim(resolved, { effect: 'opaque' })).decision);
  const [flagged] = (await store.listAmbiguous()).filter((r) => r.key.argsHash === resolved.argsHash);
  await store.resolve(resolved, { attemptsSeen: flagged!.attempts, epochSeen: flagged!.epoch, outcome: 'completed', result: results[1] });
  await read(resolved);
  const hash = await redis.hgetall(store.redisKey(resolved));
  const parts = Number(hash['result_parts'] ?? 0);
  const partTexts = Object.entries(hash).filter(([field]) => /^result(\.\d+)?$/.test(field));
  if (layout === 5) {
    expect(parts).toBeGreaterThanOrEqual(5);
    expect(partTexts).toHaveLength(parts);
    for (const [, text] of partTexts) expect(Buffer.byteLength(text)).toBeLessThanOrEqual(64);
  } else {
    expect(parts).toBe(0);
    expect(partTexts).toHaveLength(1);
  }

  // Every read of the run: its listing, each receipt, the counts (counting sets, then a scan of the receipts).
  const { tenantId, runId } = done!;
  // Oldest first, but claims in one millisecond tie (a tie is listed by key): compared in key order.
  const listed = (await store.listRun(tenantId, runId)).sort((a, b) => (a.redisKey < b.redisKey ? -1 : 1));
  // At the server's default listpack limits, layout 5 keeps the run's sorted sets listpacks: its members are short.
  const setEncoding = layout === 5 ? 'listpack' : 'skiplist';
  expect(await redis.object('ENCODING', store.runIndexKey(tenantId, runId))).toBe(setEncoding);
  expect(await redis.object('ENCODING', receiptCountRedisKey(prefix, tenantId, runId))).toBe(setEncoding);
  reads.push(
    listed,
    await store.stats({ tenantId }),
    await store.stats({ tenantId, scan: true }),
    // The resume journal's entries (their order follows creation times, which tie differently in each store).
    Object.values(journalFromReceipts(listed)).map((entries: { tool: string; result?: unknown }[]) =>
      entries.map((entry) => JSON.stringify([entry.tool, entry.result])).sort(),
    ),
  );
  const shown = await shownNames(
    store,
    listed.find((r) => r.key.toolName === done!.toolName)!,
  );
  expect(shown.cli).toHaveLength(5);
  expect(shown.console).toHaveLength(5);
  reads.push(shown);
  return { reads: comparable(reads, prefix), listed };
}

describe('receipt layouts 4 and 5', () => {
  it.each([
    [4, LEAN_RECEIPT_SCHEMA],
    [5, COMPACT_RECEIPT_SCHEMA],
  ] as const)(
    'layout %i: every operation writes no key fields, and every read gives what the same calls give in layout 2',
    async (layout, schema) => {
      const id = freshKey().runId;
      const [other, ordinary] = await Promise.all([scenario(layout, `l${layout}`, id), scenario(2, 'l2', id)]);
      expect(other.reads).toEqual(ordinary.reads);
      expect(new Set(other.listed.map((r) => r.schema))).toEqual(new Set([schema]));
      expect(new Set(ordinary.listed.map((r) => r.schema))).toEqual(new Set([ORDINARY_RECEIPT_SCHEMA, 3]));
      // The names came back decoded, awkward characters and all.
      expect(other.listed[0]!.key.tenantId).toMatch(/^acme \{eu\}\|/);
    },
  );

  it.each([4, 5] as const)(
    'layout %i: a mixed run is listed and counted right, and each receipt keeps its own layout whichever store meets it next',
    async (layout) => {
      const prefix = `${fixture.handle().prefix}mixed${layout}:`;
      const ordinary = fixture.store({ prefix, receiptLayout: 2 });
      const lean = fixture.store({ prefix, receiptLayout: layout });
      const base = awkwardKey('mail', 'a');
      const key = (argsHash: string) => ({ ...base, argsHash });
      // `fresh` is named by a default digest, so layout 5 lists it by a base64url member.
      const [old, fresh, open] = [key('old'), key(sha256Digest('fresh') as string), key('open')];
      await ordinary.fail(old, await claimFence(ordinary, old, { effect: 'opaque' }), { error: 'x' });
      await lean.fail(fresh, await claimFence(lean, fresh, { effect: 'opaque' }), { error: 'x' });
      await claimFence(lean, open, { effect: 'opaque' });

      // A next attempt keeps the receipt's layout: never raised by a layout-4 or 5 store, never lowered by a layout-2 one.
      await ordinary.complete(fresh, await claimFence(ordinary, fresh, { effect: 'opaque' }), 'second');
      await lean.complete(old, await claimFence(lean, old, { effect: 'opaque' }), 'second');
      expect(await storedFields(lean, old)).toEqual({ schema: '2', keyFields: [...KEY_FIELDS] });
      expect(await storedFields(lean, fresh)).toEqual({ schema: String(layout), keyFields: [] });
      expect(await storedFields(lean, open)).toEqual({ schema: String(layout), keyFields: [] });
      // A running compact receipt keeps its member at hand for its settle; a settled one does not.
      const heldMember = async (call: ToolCallReceiptKey) => (await fixture.connect().hgetall(lean.redisKey(call)))['index_member'];
      const openPart = lean.redisKey(open).slice(lean.redisKey(open).indexOf('}:') + 2);
      expect(await heldMember(open)).toBe(layout === 5 ? callMember(openPart, true) : undefined);
      expect(await heldMember(fresh)).toBeUndefined();

      // A call whose layout-2 lifetime expired, run again in a new layout: its index holds an entry of each form.
      const brief = fixture.store({ prefix, retentionMs: 50, receiptLayout: 2 });
      const again = key('again');
      await brief.fail(again, await claimFence(brief, again, { effect: 'opaque', leaseMs: 60 }), { error: 'x' });
      await waitUntil(
        () => brief.inspect(again),
        (record) => record === null,
      );
      await lean.complete(again, await claimFence(lean, again, { effect: 'opaque' }), 'third');
      const indexKey = lean.runIndexKey(base.tenantId, base.runId);
      const entriesBefore = await fixture.connect().zcard(indexKey);

      for (const reader of [ordinary, lean]) {
        // In the order of their args hashes: claims in one millisecond tie, and a tie is listed by key.
        const listed = (await reader.listRun(base.tenantId, base.runId)).sort((a, b) => (a.key.argsHash < b.key.argsHash ? -1 : 1));
        expect(listed.map((r) => [r.key, r.schema, r.status, r.attempts])).toEqual(
          [
            [fresh, layout, 'completed', 2],
            [again, layout, 'completed', 1],
            [old, 2, 'completed', 2],
            [open, layout, 'running', 1],
          ].sort((a, b) => ((a[0] as ToolCallReceiptKey).argsHash < (b[0] as ToolCallReceiptKey).argsHash ? -1 : 1)),
        );
        for (const scan of [false, true]) {
          expect(await reader.stats({ tenantId: base.tenantId, scan })).toMatchObject({
            total: 4,
            byStatus: { running: 1, completed: 3, failed: 0 },
          });
        }
      }
      // The listing pruned what the expired lifetime left: one entry per receipt (layout 4 lists both lifetimes by the same key).
      expect(entriesBefore).toBe(layout === 5 ? 5 : 4);
      expect(await fixture.connect().zcard(indexKey)).toBe(4);
    },
  );
});
