/**
 * `tool-receipts stats` and the store's `stats()`: counts checked against a
 * receipt-by-receipt read of the same keyspace, through the real store.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { statsCommand, statsSpec } from '../../src/cli/commands/stats.js';
import { ambiguousSinceMs } from '../../src/cli/format.js';
import { CliUsageError } from '../../src/cli/errors.js';
import type { ToolCallReceiptKey } from '../../src/core/identity.js';
import { isAmbiguousRecord, type ReceiptRecord } from '../../src/redis/receipts/reads/record.js';
import type { ReceiptStats } from '../../src/redis/runs/counts.js';
import type { ReceiptStore } from '../../src/redis/receipts/store.js';
import { useRedis, waitUntil } from '../support/redis-fixture.js';
import { Capture, spawnCli } from './support.js';

const fixture = useRedis();

type Shape = 'completed' | 'failed' | 'live' | 'ambiguous' | 'flagged' | 'resumableLapsed' | 'gone';
const SHAPES: readonly Shape[] = [
  'completed',
  'completed',
  'completed',
  'failed',
  'live',
  'ambiguous',
  'flagged',
  'resumableLapsed',
  'gone',
];

/** A deterministic pseudo-random sequence, so a failure can be replayed. */
function lcg(seed: number) {
  let state = seed >>> 0;
  return (n: number) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state % n;
  };
}

/** Receipts in every state the store can leave them in, over runs of three tenants. */
async function populate(store: ReceiptStore, seed: number): Promise<void> {
  const pick = lcg(seed);
  // Receipts kept 80 ms once settled: they expire while their run index still lists them.
  const brief = fixture.store({ prefix: store.prefix, retentionMs: 80 });
  const lapsing: { key: ToolCallReceiptKey; shape: Shape }[] = [];
  const gone: ToolCallReceiptKey[] = [];
  for (let run = 0; run < 24; run++) {
    const tenantId = ['acme', 'globex', 'acme {eu}'][run % 3]!;
    for (let i = 0, n = pick(12); i < n; i++) {
      const shape = SHAPES[pick(SHAPES.length)]!;
      const key = { tenantId, runId: `run-${run}`, toolName: ['send_email', 'sync_rows'][i % 2]!, argsHash: `h${i}` };
      const effect = shape === 'resumableLapsed' || (shape !== 'ambiguous' && shape !== 'flagged' && i % 2 === 1) ? 'resumable' : 'opaque';
      const short = shape === 'ambiguous' || shape === 'flagged' || shape === 'resumableLapsed';
      const { fence } = await (shape === 'gone' ? brief : store).claim(key, { effect, leaseMs: short ? 40 : 60_000 });
      if (shape === 'gone') await brief.complete(key, fence!, { ok: i });
      if (shape === 'completed') await store.complete(key, fence!, { ok: i });
      if (shape === 'failed') await store.fail(key, fence!, { error: 'no', tier: 'neutral' });
      if (short) lapsing.push({ key, shape });
      if (shape === 'gone') gone.push(key);
    }
  }
  for (const { key, shape } of lapsing) {
    await waitUntil(
      () => store.inspect(key),
      (r) => r?.leaseExpired === true,
    );
    if (shape === 'flagged') expect((await store.claim(key, { effect: 'opaque' })).decision.kind).toBe('ambiguous');
  }
  for (const key of gone)
    await waitUntil(
      () => store.inspect(key),
      (r) => r === null,
    );
}

/** The same counts, from every receipt read one by one. */
async function expected(store: ReceiptStore, tenantId?: string) {
  const redis = fixture.connect();
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${store.prefix}:rcpt:*`, 'COUNT', 500);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  const records = (await store.inspectRedisKeys([...new Set(keys)])).filter(
    (r): r is ReceiptRecord => r !== null && (tenantId === undefined || r.key.tenantId === tenantId),
  );
  const pairs = new Map<string, number>();
  for (const r of records) pairs.set(`${r.status}/${r.effect}`, (pairs.get(`${r.status}/${r.effect}`) ?? 0) + 1);
  const ambiguous = records.filter(isAmbiguousRecord);
  return {
    total: records.length,
    runs: new Set(records.map((r) => `${r.key.tenantId}|${r.key.runId}`)).size,
    pairs: Object.fromEntries([...pairs].sort()),
    ambiguous: ambiguous.length,
    oldest: ambiguous.length === 0 ? null : Math.min(...ambiguous.map((r) => ambiguousSinceMs(r)!)),
  };
}

const summary = (s: ReceiptStats) => ({
  total: s.total,
  runs: s.runs,
  pairs: Object.fromEntries(s.byStatusAndEffect.map((c) => [`${c.status}/${c.effect}`, c.count] as const).sort()),
  ambiguous: s.ambiguous,
  oldest: s.oldestAmbiguousSinceMs,
});

describe('stats', () => {
  it('counts exactly what a receipt-by-receipt read finds, per prefix and per tenant', async () => {
    const prefix = `${fixture.handle().prefix}st${randomBytes(3).toString('hex')}`;
    const store = fixture.store({ prefix });
    // A store whose prefix extends this one: its keys match the same SCAN pattern and must not be counted.
    const longer = fixture.store({ prefix: `${prefix}:run:x` });
    await longer.claim({ tenantId: 'acme', runId: 'run-0', toolName: 'send_email', argsHash: 'other' }, { effect: 'opaque' });
    await populate(store, 20261130);

    const all = await store.stats();
    const truth = await expected(store);
    expect(summary(all)).toEqual(truth);
    expect(summary(await store.stats({ scan: true, count: 7 }))).toEqual(truth);
    expect(truth.ambiguous).toBeGreaterThan(0);
    expect(all.byStatus.running + all.byStatus.completed + all.byStatus.failed).toBe(all.total);
    for (const tenantId of ['acme', 'acme {eu}', 'nobody']) {
      const one = await store.stats({ tenantId });
      expect(one.tenantId).toBe(tenantId);
      expect(summary(one)).toEqual(await expected(store, tenantId));
      expect(summary(await store.stats({ tenantId, scan: true }))).toEqual(summary(one));
    }
  });

  it('prints a table and the ambiguous count, or JSON, and says when there is nothing', async () => {
    const store = fixture.store({ prefix: `${fixture.handle().prefix}sp${randomBytes(3).toString('hex')}` });
    const empty = new Capture();
    await statsCommand({ store, redis: fixture.connect(), out: empty, args: { json: false } });
    expect(empty.lines.slice(0, 2)).toEqual([
      `No run is registered under prefix ${store.prefix}, so stats read every receipt in scope (a SCAN over the whole keyspace) and found none.`,
      `No receipts at all under prefix '${store.prefix}': check --prefix (the prefix your workers use; default trc).`,
    ]);

    const key = { tenantId: 'acme', runId: 'r1', toolName: 'send_email', argsHash: 'a' };
    await store.claim(key, { effect: 'opaque', leaseMs: 40 });
    const { fence } = await store.claim({ ...key, argsHash: 'b' }, { effect: 'opaque' });
    await store.complete({ ...key, argsHash: 'b' }, fence!, 'ok');
    await waitUntil(
      () => store.inspect(key),
      (r) => r?.leaseExpired === true,
    );

    const human = new Capture();
    await statsCommand({ store, redis: fixture.connect(), out: human, args: { json: false } });
    expect(human.lines[0]).toBe(`2 receipts in 1 run under prefix ${store.prefix}:`);
    expect(human.lines[2]).toMatch(/^STATUS\s+EFFECT\s+RECEIPTS$/);
    expect(human.text).toMatch(/completed\s+opaque\s+1\n/);
    expect(human.text).toMatch(/running\s+opaque\s+1\n/);
    expect(human.text).toMatch(/Ambiguous: 1, the oldest since \d{4}-\d\d-\d\dT/);

    const json = new Capture();
    await statsCommand({ store, redis: fixture.connect(), out: json, args: { json: true, tenantId: 'acme' } });
    expect(JSON.parse(json.text)).toMatchObject({ prefix: store.prefix, tenantId: 'acme', total: 2, runs: 1, ambiguous: 1 });
  });

  it('counts transactional receipts under transactional, from the counting sets as from the scan', async () => {
    const store = fixture.store({ prefix: `${fixture.handle().prefix}sx${randomBytes(3).toString('hex')}` });
    const key = { tenantId: 'acme', runId: 'r1', toolName: 'create_ticket', argsHash: 'a' };
    const { fence } = await store.claim(key, { effect: 'transactional' });
    await store.complete(key, fence!, { ticket: 7 });
    await store.claim({ ...key, argsHash: 'b' }, { effect: 'transactional' });

    const counted = await store.stats();
    expect(counted.byStatusAndEffect).toEqual([
      { status: 'completed', effect: 'transactional', count: 1 },
      { status: 'running', effect: 'transactional', count: 1 },
    ]);
    expect((await store.stats({ scan: true })).byStatusAndEffect).toEqual(counted.byStatusAndEffect);
    const human = new Capture();
    await statsCommand({ store, redis: fixture.connect(), out: human, args: { json: false } });
    expect(human.text).toMatch(/\ncompleted\s+transactional\s+1\n/);
    expect(human.text).toMatch(/\nrunning\s+transactional\s+1\n/);
  });

  it('parses --tenant and refuses an empty one or a positional', () => {
    expect(statsSpec.parse({ tenant: 'acme', json: true }, [])).toEqual({ tenantId: 'acme', json: true });
    expect(statsSpec.parse({ scan: true }, [])).toEqual({ json: false, scan: true });
    expect(statsSpec.parse({ rebuild: true }, [])).toEqual({ json: false, rebuild: true });
    expect(() => statsSpec.parse({ scan: true, rebuild: true }, [])).toThrow(/do not go together/);
    expect(() => statsSpec.parse({ tenant: '' }, [])).toThrow(CliUsageError);
    expect(() => statsSpec.parse({}, ['acme'])).toThrow(CliUsageError);
  });

  it('--rebuild counts receipts that have no counting set, and says how many it rebuilt', async () => {
    const store = fixture.store({ prefix: `${fixture.handle().prefix}sr${randomBytes(3).toString('hex')}` });
    const redis = fixture.connect();
    for (const argsHash of ['a', 'b']) await store.claim({ tenantId: 'acme', runId: 'r', toolName: 't', argsHash }, { effect: 'opaque' });
    await redis.del(...(await redis.keys(`${store.prefix}:cnt:*`)), ...(await redis.keys(`${store.prefix}:runs:*`)));
    const before = new Capture();
    await statsCommand({ store, redis: fixture.connect(), out: before, args: { json: false } });
    expect(before.lines[0]).toBe(`2 receipts in 1 run under prefix ${store.prefix}:`);
    expect(before.lines[1]).toMatch(/^Counted by reading every receipt: no run in scope is registered/);
    expect(before.lines[2]).toMatch(/stats --rebuild/);
    const scanned = new Capture();
    await statsCommand({ store, redis: fixture.connect(), out: scanned, args: { json: true, scan: true } });
    expect(JSON.parse(scanned.text)).toMatchObject({ total: 2 });

    const rebuilt = new Capture();
    await statsCommand({ store, redis: fixture.connect(), out: rebuilt, args: { json: false, rebuild: true } });
    expect(rebuilt.lines[0]).toBe('Rebuilt the counting sets of 1 run (2 receipts).');
    expect(rebuilt.lines[1]).toBe(`2 receipts in 1 run under prefix ${store.prefix}:`);
    expect(rebuilt.text).not.toMatch(/Counted by reading every receipt/);
    const json = new Capture();
    await statsCommand({ store, redis: fixture.connect(), out: json, args: { json: true, rebuild: true } });
    expect(JSON.parse(json.text)).toMatchObject({ total: 2, readBy: 'counting-sets', rebuilt: { runs: 1, receipts: 2, corrupt: 0 } });
  });

  it('runs as a real command', async () => {
    const prefix = `${fixture.handle().prefix}sc${randomBytes(3).toString('hex')}`;
    const store = fixture.store({ prefix });
    await store.claim({ tenantId: 'acme', runId: 'r', toolName: 't', argsHash: 'h' }, { effect: 'opaque' });
    const run = await spawnCli(['--prefix', prefix, 'stats', '--tenant', 'acme', '--json'], fixture.handle().url);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toMatchObject({ total: 1, byStatus: { running: 1, completed: 0, failed: 0 } });
  });
});
