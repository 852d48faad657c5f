/**
 * The ambiguous index (run registry + counting sets) lists exactly what the
 * keyspace walk lists, in the same order, and filters by tenant, tool and
 * age; counts per tenant add up to the fleet-wide counts.
 */
import { describe, expect, it } from 'vitest';
import { listAmbiguousEntries } from '../../src/redis/runs/ambiguous-index.js';
import { countReceiptsByTenant } from '../../src/redis/runs/counts.js';
import { RunRegistry } from '../../src/redis/runs/registry.js';
import { AuditLog, auditLogRedisKey } from '../../src/redis/operators/audit-log.js';
import { ambiguousSinceMs } from '../../src/operator/labels.js';
import { makeAmbiguous } from '../cli/support.js';
import { claimFence, freshKey, useRedis } from '../support/redis-fixture.js';

const fixture = useRedis();

describe('listAmbiguousEntries', () => {
  it('finds what the keyspace walk finds, oldest first, and nothing settled, running or resumable', async () => {
    const prefix = `${fixture.handle().prefix}a`;
    const store = fixture.store({ prefix });
    const redis = fixture.connect();
    const registry = new RunRegistry(redis, prefix);
    const a = freshKey({ tenantId: 'acme', toolName: 'send_email' });
    const b = freshKey({ tenantId: 'acme', toolName: 'charge_card' });
    const c = freshKey({ tenantId: 'globex', toolName: 'send_email' });
    const unflagged = freshKey({ tenantId: 'globex', toolName: 'send_email' });
    await makeAmbiguous(store, a);
    await makeAmbiguous(store, b);
    await makeAmbiguous(store, c);
    await makeAmbiguous(store, unflagged, { flag: false });
    // Not ambiguous: settled, live, resumable with a lapsed lease, and one resolved.
    const done = freshKey({ tenantId: 'acme' });
    await store.complete(done, await claimFence(store, done, { effect: 'opaque' }), 'ok');
    await store.claim(freshKey({ tenantId: 'acme' }), { effect: 'opaque', leaseMs: 60_000 });
    await store.claim(freshKey({ tenantId: 'acme' }), { effect: 'resumable', leaseMs: 50 });
    const resolved = freshKey({ tenantId: 'acme' });
    await makeAmbiguous(store, resolved);
    await store.resolve(resolved, { attemptsSeen: 1, outcome: 'failed', error: 'checked: not sent' });
    await new Promise((r) => setTimeout(r, 120));

    const walked = (await store.listAmbiguous()).sort(
      (x, y) => ambiguousSinceMs(x)! - ambiguousSinceMs(y)! || (x.redisKey < y.redisKey ? -1 : 1),
    );
    const indexed = await listAmbiguousEntries(redis, registry);
    expect(indexed.entries.map((e) => e.redisKey)).toEqual(walked.map((r) => r.redisKey));
    expect(indexed.entries.map((e) => e.sinceMs)).toEqual(walked.map((r) => ambiguousSinceMs(r)));
    expect(indexed.entries.map((e) => e.redisKey).sort()).toEqual([a, b, c, unflagged].map((k) => store.redisKey(k)).sort());
    const first = indexed.entries.find((e) => e.redisKey === store.redisKey(a))!;
    expect(first).toMatchObject({ tenantId: 'acme', runId: a.runId, toolName: 'send_email', argsHash: a.argsHash });

    const keysOf = async (filter: Parameters<typeof listAmbiguousEntries>[2]) =>
      (await listAmbiguousEntries(redis, registry, filter)).entries.map((e) => e.redisKey).sort();
    expect(await keysOf({ tenantId: 'acme' })).toEqual([a, b].map((k) => store.redisKey(k)).sort());
    expect(await keysOf({ toolName: 'send_email' })).toEqual([a, c, unflagged].map((k) => store.redisKey(k)).sort());
    expect(await keysOf({ tenantId: 'globex', toolName: 'charge_card' })).toEqual([]);
    expect(await keysOf({ minAgeMs: 3_600_000 })).toEqual([]);
    expect((await keysOf({ minAgeMs: 1 })).length).toBe(4);
  });

  it('counts per tenant add up to the counts of the whole prefix', async () => {
    const prefix = `${fixture.handle().prefix}b`;
    const store = fixture.store({ prefix });
    const redis = fixture.connect();
    for (const tenantId of ['acme', 'acme', 'globex', '<img src=x>']) {
      const key = freshKey({ tenantId });
      await store.complete(key, await claimFence(store, key, { effect: 'opaque' }), 'ok');
    }
    await makeAmbiguous(store, freshKey({ tenantId: 'globex' }));
    const { all: counted, byTenant } = await countReceiptsByTenant(redis, new RunRegistry(redis, prefix));
    const all = await store.stats();
    expect(counted).toMatchObject({ total: all.total, runs: all.runs, ambiguous: all.ambiguous, byStatusAndEffect: all.byStatusAndEffect });
    expect([...byTenant.keys()].sort()).toEqual(['<img src=x>', 'acme', 'globex']);
    expect(byTenant.get('acme')).toMatchObject({ total: 2, runs: 2, ambiguous: 0, tenantId: 'acme' });
    expect(byTenant.get('globex')).toMatchObject({ total: 2, ambiguous: 1 });
    expect([...byTenant.values()].reduce((n, s) => n + s.total, 0)).toBe(all.total);
    for (const [tenantId, stats] of byTenant) expect(stats.byStatusAndEffect).toEqual((await store.stats({ tenantId })).byStatusAndEffect);
  });
});

describe('AuditLog', () => {
  it('keeps entries newest first under the prefix, pages back with before, and stays capped', async () => {
    const prefix = `${fixture.handle().prefix}c`;
    const redis = fixture.connect();
    const log = new AuditLog(redis, prefix, 50);
    expect(log.redisKey).toBe(auditLogRedisKey(prefix));
    expect(log.redisKey).toBe(`${prefix}:audit`);
    for (let i = 0; i < 300; i++) {
      await log.append({ actor: `op${i}`, source: 'test', action: 'resolve', receipts: [`k${i}`], detail: { i } });
    }
    const newest = await log.read({ count: 3 });
    expect(newest.map((e) => e.actor)).toEqual(['op299', 'op298', 'op297']);
    expect(newest[0]).toMatchObject({ source: 'test', action: 'resolve', receipts: ['k299'], detail: { i: 299 } });
    expect(newest[0]!.atMs).toBeGreaterThan(1_600_000_000_000);
    const older = await log.read({ count: 2, before: newest[2]!.id });
    expect(older.map((e) => e.actor)).toEqual(['op296', 'op295']);
    // MAXLEN ~ trims whole macro nodes: roughly the cap, never all 300.
    expect(Number(await redis.call('XLEN', log.redisKey))).toBeLessThan(300);
  });
});
