/**
 * What the console's pages read: the ambiguous list paged by cursor (no
 * receipt skipped or repeated), and the find box's kinds, each from its index.
 */
import { describe, expect, it } from 'vitest';
import { AuditLog } from '../../src/redis/operators/audit-log.js';
import { RunRegistry } from '../../src/redis/runs/registry.js';
import { ReceiptStore } from '../../src/redis/receipts/store.js';
import { idempotencyKeyFor } from '../../src/core/identity.js';
import { find } from '../../src/console/find.js';
import { needsPage, parseAge, parseCursor, cursorText, type ConsoleData } from '../../src/console/queries.js';
import { makeAmbiguous } from '../cli/support.js';
import { claimFence, freshKey, useRedis } from '../support/redis-fixture.js';

const fixture = useRedis();

function dataFor(prefix: string): { data: ConsoleData; store: ReceiptStore } {
  const redis = fixture.connect();
  const store = new ReceiptStore({ redis, prefix });
  return { store, data: { store, redis, registry: new RunRegistry(redis, prefix), audit: new AuditLog(redis, prefix), queues: [] } };
}

describe('needsPage', () => {
  it('pages the ambiguous receipts oldest first by cursor, each exactly once, even when one is settled between pages', async () => {
    const { data, store } = dataFor(`${fixture.handle().prefix}p`);
    const keys = [];
    for (let i = 0; i < 5; i++) {
      const key = freshKey({ tenantId: 'acme', runId: `run-${i}` });
      await makeAmbiguous(store, key);
      keys.push(store.redisKey(key));
    }
    const first = await needsPage(data, {}, undefined, 2);
    expect(first.total).toBe(5);
    expect(first.rows.every((r) => r.record?.status === 'running')).toBe(true);
    // Settled by someone while the operator reads page one: the next page starts after the cursor all the same.
    const settled = first.rows[0]!.entry;
    const record = (await store.inspectRedisKeys([settled.redisKey]))[0]!;
    await store.resolve(record.key, { attemptsSeen: 1, outcome: 'failed', error: 'checked' });
    const second = await needsPage(data, {}, parseCursor(cursorText(first.next!)), 2);
    const third = await needsPage(data, {}, second.next, 2);
    expect(second.total).toBe(4);
    expect(third.next).toBeUndefined();
    const seen = [...first.rows, ...second.rows, ...third.rows].map((r) => r.entry.redisKey);
    expect(seen).toHaveLength(5);
    expect(new Set(seen)).toEqual(new Set(keys));
    const since = [...first.rows, ...second.rows, ...third.rows].map((r) => r.entry.sinceMs);
    expect(since).toEqual([...since].sort((a, b) => a - b));
  });

  it('reads ages as the filter writes them', () => {
    expect(parseAge('15m')).toBe(900_000);
    expect(parseAge('2h')).toBe(7_200_000);
    expect(parseAge(' 30 ')).toBe(1_800_000);
    expect(parseAge('')).toBeUndefined();
    expect(parseAge('soon')).toEqual({ problem: expect.stringContaining('15m, 2h') });
    expect(parseCursor('nonsense')).toBeUndefined();
  });
});

describe('find', () => {
  it('recognises a receipt key, a run key, an idempotency key, a tenant, a run id and a tool, each by its own index', async () => {
    const prefix = `${fixture.handle().prefix}f`;
    const { data, store } = dataFor(prefix);
    const lost = freshKey({ tenantId: 'globex', runId: 'run-77', toolName: 'wire_money' });
    await makeAmbiguous(store, lost);
    const done = freshKey({ tenantId: 'globex', runId: 'run-78' });
    await store.complete(done, await claimFence(store, done, { effect: 'opaque' }), 'ok');
    const kinds = async (q: string) => (await find(data, q)).map((g) => [g.kind, g.receipts.map((r) => r.redisKey), g.runs]);

    expect(await kinds(store.redisKey(lost))).toEqual([['receipt key', [store.redisKey(lost)], []]]);
    expect(await kinds(`${prefix}:run:{globex|run-77}`)).toEqual([['run key', [], [{ tenantId: 'globex', runId: 'run-77' }]]]);
    expect(await kinds(idempotencyKeyFor(lost))).toEqual([['idempotency key', [store.redisKey(lost)], []]]);
    // A settled receipt's idempotency key is not indexed: said, not guessed.
    expect(await kinds(idempotencyKeyFor(done))).toEqual([['idempotency key', [], []]]);
    const tenant = await find(data, 'globex');
    expect(tenant.map((g) => g.kind)).toEqual(['tenant']);
    expect(tenant[0]!.runs.map((r) => r.runId).sort()).toEqual(['run-77', 'run-78']);
    expect(await kinds('run-78')).toEqual([['run', [], [{ tenantId: 'globex', runId: 'run-78' }]]]);
    expect(await kinds('wire_money')).toEqual([['tool', [store.redisKey(lost)], []]]);
    expect(await kinds('nothing-like-it')).toEqual([]);
    expect(await kinds('   ')).toEqual([]);
    await expect(find(data, `${prefix}:rcpt:{a|b}:c`)).rejects.toMatchObject({ code: 'cli.invalid_receipt_key' });
  });
});

describe('find with spaces around the text', () => {
  it('takes ids exactly ("acme " is not "acme"), and tries the text without its spaces only when it found nothing, saying so', async () => {
    const prefix = `${fixture.handle().prefix}s`;
    const { data, store } = dataFor(prefix);
    const spaced = freshKey({ tenantId: 'acme ', runId: 'run-s' });
    const plain = freshKey({ tenantId: 'acme', runId: 'run-p' });
    await makeAmbiguous(store, spaced);
    await makeAmbiguous(store, plain);
    const found = async (q: string) => (await find(data, q)).map((g) => [g.kind, g.runs, g.notes]);
    expect(await found('acme ')).toEqual([['tenant', [{ tenantId: 'acme ', runId: 'run-s' }], []]]);
    expect(await found('acme')).toEqual([['tenant', [{ tenantId: 'acme', runId: 'run-p' }], []]]);
    // No run "run-p " exists: the run id without its spaces is found, and the group says so.
    expect(await found(' run-p ')).toEqual([
      ['run', [{ tenantId: 'acme', runId: 'run-p' }], [expect.stringContaining('without the spaces')]],
    ]);
    // A pasted key with a stray space is read as the key it is.
    expect((await find(data, ` ${store.redisKey(spaced)}\n`)).map((g) => [g.kind, g.receipts.map((r) => r.key.tenantId)])).toEqual([
      ['receipt key', ['acme ']],
    ]);
  });
});
