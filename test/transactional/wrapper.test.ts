/**
 * Transactional tools under the wrapper, in process, on real Redis, BullMQ
 * and PostgreSQL: a definition that cannot work is refused when defined; a
 * call commits its row with its outcome and completes its receipt; a second
 * delivery replays it; a tool that throws leaves nothing; a database without
 * the outcome table fails at start-up, printing the migrate command; the
 * reconcile sweep removes outcome rows older than the receipts' retention.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import pg from 'pg';
import { defineTool, reconcileAmbiguous, withToolReceipts, type ToolJobResult } from '../../src/bullmq/index.js';
import { pgDatabase } from '../../src/transactional/index.js';
import { approveCall, listPendingApprovals, type PendingApproval } from '../../src/approvals/index.js';
import { COMPACT_RECEIPT_SCHEMA } from '../../src/redis/index.js';
import { call, jobData, silent, useLanes } from '../bullmq/fixture.js';
import { outcomeRows, ticketsOf, usePostgres } from './fixture.js';
import { dataPool, recordCallTool } from './tools.js';

const lane = useLanes({ queues: 'redis' });
const postgres = usePostgres();
let serial = 0;
const label = () => `wrapped-${process.pid}-${++serial}`;

describe('defineTool with effect "transactional"', () => {
  const base = { name: 'record', input: z.object({}), effect: 'transactional' as const, execute: () => 1 };
  const db = pgDatabase(new pg.Pool());

  it('needs a database made by an adapter', () => {
    expect(() => defineTool({ ...base, database: undefined as never })).toThrow(/needs database, made by pgDatabase/);
    expect(() => defineTool({ ...base, database: {} as never })).toThrow(expect.objectContaining({ code: 'tool.invalid_definition' }));
  });

  it('takes no reconcile, is never read-only, and its transaction options are checked when defined', () => {
    const reconcile = () => ({ status: 'not_started' as const });
    expect(() => defineTool({ ...base, database: db, reconcile } as never)).toThrow(/takes no reconcile/);
    expect(() => defineTool({ ...base, database: db, readOnly: true })).toThrow(/cannot be read-only/);
    expect(() => defineTool({ ...base, database: db, transaction: { lockTimeoutMs: -1 } })).toThrow(/transaction\.lockTimeoutMs/);
    expect(() => defineTool({ ...base, effect: 'opaque', database: db } as never)).toThrow(/go with effect "transactional" only/);
    expect(defineTool({ ...base, database: db, transaction: { isolation: 'serializable' } }).effect).toBe('transactional');
  });
});

describe('a transactional call', () => {
  it('commits its row with its outcome row, completes its receipt, and a second delivery replays it without running', async () => {
    const l = await lane();
    const pool = dataPool(postgres.handle().url);
    const { processor } = l.worker({ tools: [recordCallTool(pool)] });
    await processor.ready();
    const name = label();
    const data = jobData([call('record_call', { label: name }, 'toolu_once')]);
    const first = await l.run(data);
    const again = await l.run(data);
    const results = [first, again].map((j) => (j.returnvalue as ToolJobResult).results[0]!);
    expect(results.map((r) => r.outcome)).toEqual(['executed', 'replayed']);
    expect(results.map((r) => JSON.parse(r.content))).toEqual([
      { label: name, writtenBy: 1 },
      { label: name, writtenBy: 1 },
    ]);
    expect(await ticketsOf(postgres.admin(), name)).toEqual([1]);
    const record = await l.receipt(data.tenantId, data.runId);
    // Layout 5 by default (3 with receiptLayout: 2): a release that reads only layout 2 refuses it rather than take it for opaque.
    expect(record).toMatchObject({ status: 'completed', attempts: 1, effect: 'transactional', schema: COMPACT_RECEIPT_SCHEMA });
    const rows = await outcomeRows(postgres.admin(), record.redisKey);
    expect(rows).toEqual([{ epoch: record.epoch, attempt: 1, result: JSON.stringify({ label: name, writtenBy: 1 }) }]);
    await pool.end();
  });

  it('whose tool throws after writing: the transaction rolls back, nothing remains, and the call failed as never started', async () => {
    const l = await lane();
    const pool = dataPool(postgres.handle().url);
    const { processor } = l.worker({ tools: [recordCallTool(pool, { failOn: 'fail' })] });
    await processor.ready();
    const name = `${label()}-fail`;
    const data = jobData([call('record_call', { label: name }, 'toolu_fail')]);
    const done = await l.run(data);
    const [result] = (done.returnvalue as ToolJobResult).results;
    expect(result).toMatchObject({ outcome: 'failed', is_error: true });
    expect(result!.content).toContain(`record_call refused ${name}`);
    expect(await ticketsOf(postgres.admin(), name)).toEqual([]);
    const record = await l.receipt(data.tenantId, data.runId);
    expect(record).toMatchObject({ status: 'failed', tier: 'neverStarted', effect: 'transactional' });
    expect(await outcomeRows(postgres.admin(), record.redisKey)).toEqual([]);
    await pool.end();
  });
});

describe('a transactional call that needs approval', () => {
  it('approved, runs once, and its receipt records it as transactional (in the default compact layout, which includes what layout 3 means), as a claimed one does', async () => {
    const l = await lane();
    const pool = dataPool(postgres.handle().url);
    const { processor } = l.worker({ tools: [defineTool({ ...recordCallTool(pool), approval: 'always' })] });
    await processor.ready();
    const name = `${label()}-approved`;
    const data = jobData([call('record_call', { label: name }, 'toolu_approved')]);
    const job = await l.add(data);
    let pending: PendingApproval | undefined;
    for (let tries = 0; pending === undefined && tries < 200; tries++) {
      [pending] = await listPendingApprovals({ redis: l.redis, prefix: l.prefix });
      if (pending === undefined) await new Promise((r) => setTimeout(r, 50));
    }
    // Asked as what it is: a lapsed attempt of it is settled from its outcome row, never called ambiguous.
    expect(await l.redis.hmget(pending!.receiptKey, 'status', 'effect')).toEqual(['awaiting_approval', 'transactional']);
    await approveCall({ redis: l.redis, prefix: l.prefix, ...pending!, actor: 'ana', queue: l.queue });
    const done = await l.settle(job);
    expect((done.returnvalue as ToolJobResult).results.map((r) => r.outcome)).toEqual(['executed']);
    expect(await ticketsOf(postgres.admin(), name)).toEqual([1]);
    const record = await l.receipt(data.tenantId, data.runId);
    expect(record).toMatchObject({ status: 'completed', attempts: 1, effect: 'transactional', schema: COMPACT_RECEIPT_SCHEMA });
    expect(await outcomeRows(postgres.admin(), record.redisKey)).toHaveLength(1);
    await pool.end();
  });
});

describe('a transactional receipt whose attempt reports its outcome unknown (a lost COMMIT reply)', () => {
  it('is left lapsed for the outcome row to settle, never flagged ambiguous as an opaque one is', async () => {
    const l = await lane();
    const claimed = async (effect: 'transactional' | 'opaque', argsHash: string) => {
      const key = { tenantId: 'acme', runId: `run-${label()}`, toolName: 'record_call', argsHash };
      const claim = await l.store.claim(key, { effect, leaseMs: 30_000 });
      await l.store.markOutcomeUnknown(key, claim.fence!, 'COMMIT sent, its reply lost');
      return (await l.store.inspect(key))!;
    };
    const transactional = await claimed('transactional', 'a'.repeat(64));
    expect(transactional).toMatchObject({
      status: 'running',
      effect: 'transactional',
      leaseExpired: true,
      ambiguousMs: null,
      schema: COMPACT_RECEIPT_SCHEMA,
    });
    const opaque = await claimed('opaque', 'b'.repeat(64));
    expect(opaque).toMatchObject({ status: 'running', effect: 'opaque', leaseExpired: true, ambiguousMs: expect.any(Number) });
    expect((await l.store.listAmbiguous()).map((r) => r.redisKey)).toEqual([opaque.redisKey]);
  });
});

describe('start-up', () => {
  it('a database without the outcome table fails ready() with the migrate command, and so does a job, before any call', async () => {
    const l = await lane();
    const pool = dataPool(postgres.handle().url);
    const tool = defineTool({
      name: 'record_elsewhere',
      input: z.object({}),
      effect: 'transactional',
      database: pgDatabase(pool, { table: 'outcomes_not_migrated' }),
      execute: () => 'never',
    });
    const processor = withToolReceipts({ redis: l.redis, prefix: l.prefix, tools: [tool], logger: silent });
    const refusal = await processor.ready().catch((error: unknown) => error);
    expect(refusal).toMatchObject({ code: 'transactional.table_missing' });
    expect((refusal as Error).message).toContain('tool-receipts migrate --postgres');
    expect((refusal as Error).message).toContain('--table outcomes_not_migrated');
    const { worker } = l.worker({ tools: [tool] });
    const data = jobData([call('record_elsewhere', {}, 'toolu_nowhere')]);
    const failed = await l.settle(await l.add(data));
    expect(failed.failedReason).toContain('tool-receipts migrate --postgres');
    // Refused before the call: no receipt was claimed.
    expect(await l.store.listRun(data.tenantId, data.runId)).toEqual([]);
    await worker.close();
    await pool.end();
  });
});

describe('retention', () => {
  it('the reconcile sweep removes outcome rows older than twice the retention plus a lease, and keeps younger ones', async () => {
    const l = await lane();
    const pool = dataPool(postgres.handle().url);
    const admin = postgres.admin();
    const old = `${label()}-old`;
    const young = `${label()}-young`;
    await admin.query(
      `INSERT INTO tool_receipt_outcomes (receipt_key, epoch, attempt, started_at, finished_at, result)
       VALUES ($1, 'e', 1, now() - interval '3 days', now() - interval '3 days', '1'), ($2, 'e', 1, now() - interval '47 hours', now(), '2')`,
      [old, young],
    );
    await reconcileAmbiguous({ redis: l.redis, prefix: l.prefix, tools: [recordCallTool(pool)], retentionMs: 86_400_000, logger: silent });
    expect(await outcomeRows(admin, old)).toEqual([]);
    expect(await outcomeRows(admin, young)).toHaveLength(1);
    await pool.end();
  });
});
