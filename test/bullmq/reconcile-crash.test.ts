/**
 * Settling an interrupted opaque call without a person, with real worker
 * processes SIGKILLed mid-call: send_email's reconcile looks the email up in
 * the outbox by idempotency key, and charge_card is keyed (its provider
 * deduplicates on the key). Real Queues, Workers and Redis throughout.
 */
import { describe, expect, it } from 'vitest';
import type { ToolJobResult } from '../../src/bullmq/index.js';
import { duplicateEffects, providerDeduped } from '../../examples/outbox-tools.js';
import { runCli } from '../../src/cli/cli.js';
import { Capture } from '../cli/support.js';
import {
  emailJob,
  expectCompleted,
  expectUnrecoverablyAmbiguous,
  frozenAt,
  killAndTakeOver,
  outboxOf,
  JOB_TIMEOUT_MS,
  STEP_TIMEOUT_MS,
} from './crash-support.js';
import { call, decisionsOf, decisionTrail, expectWaitsThen, jobData, RETRYING, useLanes, type Lane } from './fixture.js';
import type { WorkerProcess } from '../support/worker-process.js';

const lane = useLanes();
const OUTBOX = { RECONCILE: 'outbox' } as const;

const chargeJob = () => jobData([call('charge_card', { customer: 'cus_42', cents: 1999 }, 'toolu_charge')]);

/** The verdict the takeover reported, after waiting for it. */
const reconciledBy = async (w: WorkerProcess) =>
  (await w.waitFor((m) => m.type === 'reconciled', STEP_TIMEOUT_MS)).event as { verdict: string; attempt: number; note?: string };

/** Worker ids default to host:pid:random; this one's pid is the takeover's. */
const byProcess = (w: WorkerProcess) => expect.stringContaining(`:${w.child.pid}:`);

const expectNothingForAPerson = async (l: Lane) => expect(await l.store.listAmbiguous()).toEqual([]);

describe('send_email with a reconcile that looks the email up in the outbox', () => {
  it('SIGKILL after the email went: reconciled completed, the job replays it, the email went once', async () => {
    const { l, first, data, job } = await frozenAt(lane, 'after-effect:send', emailJob, OUTBOX);
    const receiptKey = decisionsOf(first)[0]!.receiptKey;
    const takeover = await killAndTakeOver(l, first, OUTBOX);

    const done = await expectCompleted(l, job);
    expect((done.returnvalue as ToolJobResult).results).toMatchObject([{ outcome: 'replayed', tool_use_id: 'toolu_email' }]);
    expect(JSON.parse((done.returnvalue as ToolJobResult).results[0]!.content)).toEqual({ sent: true, to: 'ops@example.com' });
    expect(await reconciledBy(takeover)).toMatchObject({ verdict: 'completed', attempt: 1 });
    expectWaitsThen(decisionTrail(takeover), 'replay');

    const outbox = await outboxOf(l);
    expect(outbox.map((e) => [e.tool, e.attempt, e.pid])).toEqual([['send_email', 1, first.child.pid]]);
    const record = await l.receipt(data.tenantId, data.runId);
    expect(record).toMatchObject({ status: 'completed', attempts: 1 });
    expect(record.reconciled).toMatchObject({ verdict: 'completed', attempt: 1, by: byProcess(takeover), note: null });
    // What an operator sees with redis-cli.
    const raw = await l.redis.hgetall(receiptKey);
    expect(raw).toMatchObject({ reconciled: 'completed', reconciled_attempt: '1', reconciled_by: record.reconciled!.by });
    // The compact layout keeps no started_ms for a first attempt: it started when the receipt was created.
    expect(Number(raw.reconciled_ms)).toBeGreaterThanOrEqual(Number(raw.started_ms ?? raw.created_ms));
    await expectNothingForAPerson(l);
  });

  it('SIGKILL before the email went: reconciled not started, attempt 2 sends it once', async () => {
    const { l, first, data, job } = await frozenAt(lane, 'before-effect', emailJob, OUTBOX);
    const takeover = await killAndTakeOver(l, first, OUTBOX);

    const done = await expectCompleted(l, job);
    expect((done.returnvalue as ToolJobResult).results.map((r) => r.outcome)).toEqual(['executed']);
    expect(await reconciledBy(takeover)).toMatchObject({ verdict: 'not_started', attempt: 1 });
    await takeover.waitFor((m) => m.type === 'settled', STEP_TIMEOUT_MS);
    expectWaitsThen(decisionTrail(takeover), 'execute@2');

    const outbox = await outboxOf(l);
    expect(outbox.map((e) => [e.tool, e.attempt, e.pid])).toEqual([['send_email', 2, takeover.child.pid]]);
    const record = await l.receipt(data.tenantId, data.runId);
    expect(record).toMatchObject({ status: 'completed', attempts: 2, ambiguousMs: null });
    expect(record.reconciled).toMatchObject({ verdict: 'not_started', attempt: 1, by: byProcess(takeover) });
    // Both attempts ran in the same BullMQ job, and the receipt says so.
    expect(record.jobs.map((j) => [j.attempt, j.queue, j.id])).toEqual([
      [1, l.queueName, job.id],
      [2, l.queueName, job.id],
    ]);
    await expectNothingForAPerson(l);
  });

  it.each([
    ['unknown', /provider keeps no record/],
    ['throw', /reconcile threw: provider lookup failed/],
  ])('a reconcile that says %s leaves the call ambiguous, and the email is never sent again', async (mode, note) => {
    const { l, first, data, job } = await frozenAt(lane, 'after-effect:send', emailJob, { RECONCILE: mode });
    const receiptKey = decisionsOf(first)[0]!.receiptKey;
    const takeover = await killAndTakeOver(l, first, { RECONCILE: mode });

    await expectUnrecoverablyAmbiguous(l, job, takeover);
    expect((await reconciledBy(takeover)).verdict).toBe('unknown');
    expect(takeover.messages.filter((m) => m.type === 'reconcile-asked')).toHaveLength(1);
    expect((await outboxOf(l)).map((e) => e.attempt)).toEqual([1]);
    const record = await l.receipt(data.tenantId, data.runId);
    expect(record).toMatchObject({ status: 'running', attempts: 1, leaseExpired: true, ambiguousMs: expect.any(Number) });
    expect(record.reconciled?.verdict).toBe('unknown');
    expect(record.reconciled?.note).toMatch(note);
    // Still a person's to settle, and listed as such.
    expect((await l.store.listAmbiguous()).map((r) => r.redisKey)).toEqual([receiptKey]);
  });
});

describe('charge_card, keyed: its provider deduplicates on the idempotency key', () => {
  it('inside the window: attempt 2 runs with the same key and the provider absorbs the repeat', async () => {
    const { l, first, data, job } = await frozenAt(lane, 'after-effect:charge', chargeJob);
    const takeover = await killAndTakeOver(l, first);

    const done = await expectCompleted(l, job);
    expect((done.returnvalue as ToolJobResult).results.map((r) => r.outcome)).toEqual(['executed']);
    const rerun = await takeover.waitFor((m) => m.type === 'keyedRerun', STEP_TIMEOUT_MS);
    expect(rerun.event).toMatchObject({ attempt: 2 });
    const outbox = await outboxOf(l);
    expect(outbox.map((e) => [e.tool, e.attempt])).toEqual([['charge_card', 1]]);
    expect(await providerDeduped(l.redis, l.prefix)).toEqual({ charge: 1 });
    expect(duplicateEffects(outbox)).toEqual([]);
    const record = await l.receipt(data.tenantId, data.runId);
    expect(record).toMatchObject({ status: 'completed', attempts: 2, keyedRerunMs: expect.any(Number) });
  });

  it('past the window: ambiguous, and not run again', async () => {
    // The window (1 s from the first attempt's start) has closed before a takeover can claim.
    const env = { KEY_WINDOW_MS: '1000' };
    const { l, first, data, job } = await frozenAt(lane, 'after-effect:charge', chargeJob, env);
    const takeover = await killAndTakeOver(l, first, env);

    await expectUnrecoverablyAmbiguous(l, job, takeover);
    expect(takeover.messages.filter((m) => m.type === 'keyedRerun')).toEqual([]);
    expect((await outboxOf(l)).map((e) => e.attempt)).toEqual([1]);
    expect(await providerDeduped(l.redis, l.prefix)).toEqual({});
    expect(await l.receipt(data.tenantId, data.runId)).toMatchObject({ status: 'running', attempts: 1, keyedRerunMs: null });
  });
});

describe('resolve --retry-job', () => {
  it("turns failed ambiguous jobs (the attempt's and a duplicate that met it) into completed ones that replay the resolved call and run the rest of the turn", async () => {
    const turn = () =>
      jobData([
        call('send_email', { to: 'ops@example.com', subject: 'Quarterly report', body: 'Attached.' }, 'toolu_email'),
        call('create_ticket', { title: 'Follow up on the report' }, 'toolu_ticket'),
      ]);
    const { l, first, data, job } = await frozenAt(lane, 'after-effect:send', turn);
    const takeover = await killAndTakeOver(l, first);
    await expectUnrecoverablyAmbiguous(l, job, takeover);
    // The same turn enqueued again meets the ambiguous call too, and fails.
    const duplicate = await l.add(data, RETRYING);
    expect((await l.settle(duplicate, JOB_TIMEOUT_MS)).failedReason).toMatch(/^receipt\.ambiguous/);
    const [ambiguous] = await l.store.listAmbiguous();
    expect(ambiguous!.jobs.map((j) => j.id)).toEqual([job.id]);
    expect(ambiguous!.metJobs.map((j) => j.id)).toContain(duplicate.id);

    const out = new Capture();
    const err = new Capture();
    const args = ['resolve', ambiguous!.redisKey, '--attempts', '1', '--completed', '--result', '{"sent":true}', '--retry-job'];
    const code = await runCli([...args, '--prefix', l.prefix], { stdout: out, stderr: err, env: { REDIS_URL: l.url } });
    expect(err.text).toBe('');
    expect(code).toBe(0);
    expect(out.text).toContain(`Retried job ${job.id} of queue ${l.queueName}`);
    expect(out.text).toContain(`Retried job ${duplicate.id} of queue ${l.queueName}`);

    for (const finished of [await expectCompleted(l, job), await expectCompleted(l, duplicate)]) {
      const results = (finished.returnvalue as ToolJobResult).results;
      expect(results.map((r) => r.tool_use_id)).toEqual(['toolu_email', 'toolu_ticket']);
      expect(results[0]).toMatchObject({ outcome: 'replayed', content: '{"sent":true}' });
      expect(['executed', 'replayed']).toContain(results[1]!.outcome);
    }
    const outbox = await outboxOf(l);
    expect(outbox.filter((e) => e.tool === 'send_email')).toHaveLength(1);
    expect(outbox.filter((e) => e.tool === 'create_ticket').map((e) => e.part)).toEqual(['reserve', 'create', 'notify']);
    expect(duplicateEffects(outbox)).toEqual([]);
    expect((await l.store.listRun(data.tenantId, data.runId)).map((r) => r.status)).toEqual(['completed', 'completed']);
  });
});
