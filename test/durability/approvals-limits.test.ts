/**
 * The durability of the writes approvals and limits make, against a real
 * replica: with `durability: { replicas: 1 }` and the replica cut off, the
 * approval gate, a person's decision and a limit's commit each fail typed
 * (`durability.not_acknowledged`), as a claim does, instead of being
 * reported done while only the primary has them; with the replica back the
 * same writes succeed and the replica holds them. On a server without
 * WAITAOF, `aof` refuses each before anything is written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approveCall, denyCall, listPendingApprovals } from '../../src/approvals/index.js';
import { ApprovalGate } from '../../src/approvals/gate.js';
import { defineLimit, LimitStore } from '../../src/limits/index.js';
import { DurabilityUnsupportedError, ReceiptNotDurableError, ReceiptsKeyspace } from '../../src/redis/index.js';
import { hasWaitAof, type DurabilityOptions } from '../../src/redis/durability/durability.js';
import { AuditLog } from '../../src/redis/operators/audit-log.js';
import { freshKey } from '../support/redis-fixture.js';
import type { LocalRedis } from '../support/redis-process.js';
import { cutOffReplica, reconnectReplica, startPrimaryWithReplica, withNode } from '../support/redis-cluster.js';
import { uniquePrefix } from '../support/redis.js';
import { YEAR_MS } from '../support/limit-windows.js';
import { sentinelSkipReason } from '../support/redis-sentinel.js';
import { openSingle, type OpenedClient } from '../support/redis-clients.js';

const skip = sentinelSkipReason();
// Generous: the replica's acknowledgement must come in time on a loaded machine; cut off, each write waits this long.
const DURABLE: DurabilityOptions = { replicas: 1, timeoutMs: 1500 };

describe.skipIf(skip !== undefined)('approvals and limits with durability, one primary and one replica', () => {
  let primary: LocalRedis;
  let replica: LocalRedis;
  const opened: OpenedClient[] = [];
  const prefix = uniquePrefix();
  beforeAll(async () => {
    ({ primary, replica } = await startPrimaryWithReplica(prefix, { appendonly: true }));
  });
  afterAll(async () => {
    await Promise.all(opened.map((c) => c.close()));
    await replica?.stop();
    await primary?.stop();
  });
  const client = () => {
    const c = openSingle('ioredis-5', primary.url);
    opened.push(c);
    return c.client;
  };
  const keyspace = () => ReceiptsKeyspace.open({ redis: client(), prefix, durability: DURABLE });
  const onReplica = (key: string, field: string) => withNode(replica, (a) => a.hget(key, field));

  /** A call parked awaiting approval (the gate run with the replica connected), and its receipt key. */
  async function pending(gate: ApprovalGate) {
    const key = freshKey();
    const answer = await gate.pass(
      { key, needed: { reason: 'refund' }, effect: 'opaque', timeoutMs: 60_000, shown: '', job: undefined },
      () => undefined,
    );
    if (answer.kind !== 'await') throw new Error(`expected a call awaiting approval, got ${answer.kind}`);
    return { key, receiptKey: keyspace().receipts.redisKey(key), epoch: answer.epoch, argsHash: key.argsHash };
  }

  it('a gate that asks for approval, and a decision, fail typed while the replica is cut off; succeed once it is back', async () => {
    const gate = new ApprovalGate(keyspace().channel);
    const first = await pending(gate);
    const second = await pending(gate);
    const unacknowledged = { key: freshKey(), needed: {}, effect: 'opaque', timeoutMs: 60_000, shown: '', job: undefined } as const;
    await cutOffReplica(replica, primary);
    try {
      const gated = await gate.pass(unacknowledged, () => undefined).catch((e: unknown) => e);
      expect(gated).toBeInstanceOf(ReceiptNotDurableError);
      expect(gated).toMatchObject({ code: 'durability.not_acknowledged', write: 'approvalGate' });
      const refused = await denyCall({ redis: client(), prefix, durability: DURABLE, ...first, actor: 'ana' }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ReceiptNotDurableError);
      expect(refused).toMatchObject({ code: 'durability.not_acknowledged', write: 'approvalDecision' });
      // The primary holds the decision: it is in the audit log and off the pending list all the same.
      const audit = await new AuditLog(client(), prefix).read({ count: 50 });
      expect(audit.some((entry) => entry.action === 'deny' && entry.actor === 'ana' && entry.receipts.includes(first.receiptKey))).toBe(
        true,
      );
      expect((await listPendingApprovals({ redis: client(), prefix })).map((p) => p.receiptKey)).not.toContain(first.receiptKey);
    } finally {
      await reconnectReplica(replica, primary);
    }
    // The gate's retry finds the call it created awaiting, and lists it for a person (the refused gate never did).
    const retried = await gate.pass(unacknowledged, () => undefined);
    expect(retried).toMatchObject({ kind: 'await', created: false, listedNow: true });
    const listed = await listPendingApprovals({ redis: client(), prefix });
    expect(listed.map((p) => p.receiptKey)).toContain(keyspace().receipts.redisKey(unacknowledged.key));
    expect(await gate.pass(unacknowledged, () => undefined)).toMatchObject({ kind: 'await', listedNow: false });
    // The primary kept what it wrote: asked again, the call names the decision it holds; the replica has it now.
    await expect(approveCall({ redis: client(), prefix, durability: DURABLE, ...first, actor: 'bo' })).rejects.toMatchObject({
      code: 'approval.not_pending',
      decidedBy: 'ana',
    });
    expect(await onReplica(first.receiptKey, 'status')).toBe('denied');
    // A decision made with the replica there is acknowledged, and on the replica when it returns.
    await approveCall({ redis: client(), prefix, durability: DURABLE, ...second, actor: 'ana' });
    expect(await onReplica(second.receiptKey, 'approval_decision')).toBe('approved');
  });

  it('a limit commit fails typed while the replica is cut off; the commit after succeeds and the replica counts it', async () => {
    const store = new LimitStore({ redis: client(), prefix, durability: DURABLE });
    const once = defineLimit({ name: `once-${Date.now()}`, per: 'tenant', max: 2, windowMs: YEAR_MS });
    const key = freshKey();
    const reserved = await store.reserve(once, key);
    if (!reserved.granted) throw new Error('expected a grant');
    await cutOffReplica(replica, primary);
    try {
      const refused = await store.commit(reserved.reservation).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ReceiptNotDurableError);
      expect(refused).toMatchObject({ code: 'durability.not_acknowledged', write: 'limit' });
    } finally {
      await reconnectReplica(replica, primary);
    }
    expect(await store.commit(reserved.reservation)).toBe('already_committed');
    const next = await store.reserve(once, { ...key, argsHash: `${key.argsHash}-2` });
    if (!next.granted) throw new Error('expected a grant');
    expect(await store.commit(next.reservation)).toBe('committed');
    expect(await onReplica(next.reservation.keys.state, 'used')).toBe('2');
  });

  it('refuses aof durability on a server without WAITAOF before the gate, a decision or a limit writes anything, as the claim does', async (ctx) => {
    if (await hasWaitAof(client())) ctx.skip('this redis-server has WAITAOF (7.2+)');
    const aof: DurabilityOptions = { replicas: 0, aof: true };
    const first = await pending(new ApprovalGate(keyspace().channel));
    const before = await withNode(primary, (a) => a.hgetall(first.receiptKey));

    const strict = ReceiptsKeyspace.open({ redis: client(), prefix, durability: aof });
    const key = freshKey();
    const gated = await new ApprovalGate(strict.channel)
      .pass({ key, needed: {}, effect: 'opaque', timeoutMs: 60_000, shown: '', job: undefined }, () => undefined)
      .catch((e: unknown) => e);
    expect(gated).toBeInstanceOf(DurabilityUnsupportedError);
    expect(await withNode(primary, (a) => a.exists(strict.receipts.redisKey(key)))).toBe(0);

    const decided = await approveCall({ redis: client(), prefix, durability: aof, ...first, actor: 'ana' }).catch((e: unknown) => e);
    expect(decided).toBeInstanceOf(DurabilityUnsupportedError);
    expect(await withNode(primary, (a) => a.hgetall(first.receiptKey))).toEqual(before);

    const limits = new LimitStore({ redis: client(), prefix, durability: aof });
    const once = defineLimit({ name: `aof-${Date.now()}`, per: 'tenant', max: 2, windowMs: 3_600_000 });
    await expect(limits.reserve(once, key)).rejects.toBeInstanceOf(DurabilityUnsupportedError);
    expect(await withNode(primary, (a) => a.exists(limits.keysOf(once, key).state))).toBe(0);
  });
});
