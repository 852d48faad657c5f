/**
 * Crash acceptance tests: a real worker process is SIGKILLed at a chosen
 * point of a tool call, and a second worker process picks the stalled job up
 * through BullMQ's own stalled-job recovery. Nothing is mocked: real Queues,
 * real Workers, the harness's Redis, and an outbox of landed side effects.
 *
 * Every wait is on observable state (IPC messages, job state, receipt
 * fields); leases and locks are short so recovery takes seconds.
 */
import type { Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import type { ToolJobResult } from '../../src/index.js';
import { duplicateEffects, providerDeduped, readOutbox } from '../../examples/outbox-tools.js';
import type { WorkerMessage, WorkerProcess } from '../support/worker-process.js';
import { call, decisionsOf, decisionTrail, expectWaitsThen, jobData, RETRYING, useLanes, type Lane } from './fixture.js';

/** Generous bounds: recovery needs a lock expiry plus a stalled check or two, and child processes start in ~2 s. */
const STEP_TIMEOUT_MS = 30_000;
const JOB_TIMEOUT_MS = 45_000;

const lane = useLanes();

const reached = (point: string) => (m: WorkerMessage) => m.type === 'reached' && m.point === point;

const emailJob = () =>
  jobData([call('send_email', { to: 'ops@example.com', subject: 'Quarterly report', body: 'Attached.' }, 'toolu_email')]);
const ticketJob = () => jobData([call('create_ticket', { title: 'Printer on fire', assignee: 'facilities' }, 'toolu_ticket')]);
type CrashJobData = ReturnType<typeof emailJob>;

/** Side effects landed so far on this lane. */
const outboxOf = (l: Lane) => readOutbox(l.redis, l.prefix);

/**
 * A fresh lane, a first worker process that freezes at `crashAt`, and a job
 * (retries allowed) that has reached that point on it.
 */
async function frozenAt(crashAt: string, makeJob: () => CrashJobData) {
  const l = await lane();
  const first = await l.spawn({ CRASH_AT: crashAt });
  const data = makeJob();
  const job = await l.add(data, RETRYING);
  await first.waitFor(reached(crashAt), STEP_TIMEOUT_MS);
  return { l, first, data, job };
}

/**
 * Kill `first` where it froze and let a CRASH_AT=none worker recover the job
 * through BullMQ's stalled-job check. Returns the takeover worker.
 */
async function killAndTakeOver(l: Lane, first: WorkerProcess): Promise<WorkerProcess> {
  await first.signal('SIGKILL');
  return l.spawn({ CRASH_AT: 'none' });
}

/** Wait until the job completed (or failed) and expect it completed, with no failure recorded. */
const expectCompleted = async (l: Lane, job: Job) => {
  const done = await l.settle(job, JOB_TIMEOUT_MS);
  expect(done.failedReason).toBeUndefined();
  expect(await done.getState()).toBe('completed');
  return done;
};

/** The job completed its one call as `executed`, settled by attempt 2 on the takeover worker. */
const expectExecutedByTakeover = async (l: Lane, job: Job, takeover: WorkerProcess) => {
  const done = await expectCompleted(l, job);
  expect((done.returnvalue as ToolJobResult).results.map((r) => r.outcome)).toEqual(['executed']);
  await takeover.waitFor((m) => m.type === 'settled', STEP_TIMEOUT_MS);
  expectWaitsThen(decisionTrail(takeover), 'execute@2');
  return done;
};

const ambiguousReceipt = async (l: Lane, tenantId: string, runId: string, receiptKey: string) => {
  const record = await l.receipt(tenantId, runId);
  expect(record.redisKey).toBe(receiptKey);
  expect(record).toMatchObject({ status: 'running', attempts: 1, effect: 'opaque', leaseExpired: true });
  expect(record.ambiguousMs).toEqual(expect.any(Number));
  // The raw hash says the same, for an operator with redis-cli.
  expect(Number(await l.redis.hget(receiptKey, 'ambiguous_ms'))).toBe(record.ambiguousMs);
  const listed = await l.store.listAmbiguous();
  expect(listed.map((r) => r.redisKey)).toEqual([receiptKey]);
  return record;
};

const expectUnrecoverablyAmbiguous = async (l: Lane, job: Job, takeover: WorkerProcess) => {
  const done = await l.settle(job, JOB_TIMEOUT_MS);
  expect(await done.getState()).toBe('failed');
  expect(done.failedReason).toMatch(/^receipt\.ambiguous/);
  // Failed on its first counted attempt although 3 were allowed: UnrecoverableError, not a retry budget spent.
  expect(done.attemptsMade).toBe(1);
  // It got there through BullMQ's stalled-job recovery, not a fresh delivery.
  expect(done.stalledCounter).toBeGreaterThanOrEqual(1);
  // IPC and the queue's event stream are not ordered with each other: wait for the message before reading the trail.
  await takeover.waitFor((m) => m.type === 'ambiguous', STEP_TIMEOUT_MS);
  expectWaitsThen(decisionTrail(takeover), 'ambiguous');
  return done;
};

describe('a worker SIGKILLed after claim, before the effect', () => {
  it('opaque send_email: the takeover finds it ambiguous, fails the job unrecoverably, sends nothing', async () => {
    const { l, first, data, job } = await frozenAt('before-effect', emailJob);
    expect(decisionTrail(first)).toEqual(['execute@1']);
    const receiptKey = decisionsOf(first)[0]!.receiptKey;

    const takeover = await killAndTakeOver(l, first);
    await expectUnrecoverablyAmbiguous(l, job, takeover);

    expect(await outboxOf(l)).toEqual([]);
    await ambiguousReceipt(l, data.tenantId, data.runId, receiptKey);
  });

  it('resumable create_ticket: attempt 2 takes over and runs every step exactly once', async () => {
    const { l, first, data, job } = await frozenAt('before-effect', ticketJob);
    expect(decisionTrail(first)).toEqual(['execute@1']);

    const takeover = await killAndTakeOver(l, first);
    await expectExecutedByTakeover(l, job, takeover);

    const outbox = await outboxOf(l);
    expect(outbox.map((e) => [e.part, e.attempt, e.pid])).toEqual([
      ['reserve', 2, takeover.child.pid],
      ['create', 2, takeover.child.pid],
      ['notify', 2, takeover.child.pid],
    ]);
    expect(duplicateEffects(outbox)).toEqual([]);
    expect(await providerDeduped(l.redis, l.prefix)).toEqual({});
    const record = await l.receipt(data.tenantId, data.runId);
    expect(record).toMatchObject({ status: 'completed', attempts: 2, ambiguousMs: null });
    expect(Object.keys(record.steps).sort()).toEqual(['create', 'notify', 'reserve']);
  });
});

describe('a worker SIGKILLed after the effect landed, before the receipt completed', () => {
  it('opaque send_email: ambiguous, failed unrecoverably, flagged, and the email is never re-sent', async () => {
    const { l, first, data, job } = await frozenAt('after-effect:send', emailJob);
    const receiptKey = decisionsOf(first)[0]!.receiptKey;
    expect(await outboxOf(l)).toHaveLength(1);

    const takeover = await killAndTakeOver(l, first);
    await expectUnrecoverablyAmbiguous(l, job, takeover);

    const outbox = await outboxOf(l);
    expect(outbox.map((e) => [e.tool, e.part, e.attempt, e.pid])).toEqual([['send_email', 'send', 1, first.child.pid]]);
    await ambiguousReceipt(l, data.tenantId, data.runId, receiptKey);
  });

  it('resumable create_ticket killed after `create` landed: attempt 2 skips reserve, the provider absorbs create, notify lands once', async () => {
    const { l, first, data, job } = await frozenAt('after-effect:create', ticketJob);
    // What the crash leaves: reserve landed and recorded, create landed but not recorded.
    const before = await l.receipt(data.tenantId, data.runId);
    expect(Object.keys(before.steps)).toEqual(['reserve']);
    expect((await outboxOf(l)).map((e) => e.part)).toEqual(['reserve', 'create']);

    const takeover = await killAndTakeOver(l, first);
    const done = await expectExecutedByTakeover(l, job, takeover);

    const outbox = await outboxOf(l);
    expect(outbox.map((e) => [e.part, e.attempt])).toEqual([
      ['reserve', 1],
      ['create', 1],
      ['notify', 2],
    ]);
    expect(outbox.filter((e) => e.part === 'reserve' && e.attempt === 2)).toEqual([]);
    const deduped = await providerDeduped(l.redis, l.prefix);
    expect(deduped.reserve).toBeUndefined();
    expect(deduped.create).toBe(1);
    expect(deduped.notify).toBeUndefined();
    expect(duplicateEffects(outbox)).toEqual([]);

    const record = await l.receipt(data.tenantId, data.runId);
    expect(record).toMatchObject({ status: 'completed', attempts: 2 });
    // reserve's recorded value is the one attempt 1 returned: the same ticket id, carried over.
    expect(record.steps.reserve).toBe(before.steps.reserve);
    expect(Object.keys(record.steps).sort()).toEqual(['create', 'notify', 'reserve']);
    const ticket = JSON.parse((done.returnvalue as ToolJobResult).results[0]!.content) as { ticket: string };
    expect(ticket.ticket).toBe(before.steps.reserve);
  });
});

describe('a worker SIGKILLed after the receipt completed, before the job finished', () => {
  it.each([
    ['send_email', emailJob],
    ['create_ticket', ticketJob],
  ])('%s: the redelivered job replays the recorded result and nothing lands twice', async (_tool, makeJob) => {
    const { l, first, data, job } = await frozenAt('after-complete', makeJob);
    const settled = await first.waitFor((m) => m.type === 'settled', STEP_TIMEOUT_MS);
    expect(settled.event).toMatchObject({ attempt: 1, outcome: 'executed' });
    const completed = await l.receipt(data.tenantId, data.runId);
    expect(completed).toMatchObject({ status: 'completed', attempts: 1 });
    const landed = await outboxOf(l);
    expect(await job.getState()).toBe('active');

    const takeover = await killAndTakeOver(l, first);
    const done = await expectCompleted(l, job);
    await takeover.waitFor((m) => m.type === 'decision', STEP_TIMEOUT_MS);
    expect(decisionTrail(takeover)).toEqual(['replay']);
    const [result] = (done.returnvalue as ToolJobResult).results;
    expect(result).toMatchObject({ outcome: 'replayed', tool_use_id: data.calls[0]!.id });
    expect(result!.content).toBe((completed.result as { content: string }).content);

    const outbox = await outboxOf(l);
    expect(outbox).toEqual(landed);
    expect(outbox.length).toBe(data.calls[0]!.name === 'send_email' ? 1 : 3);
    expect(outbox.every((e) => e.attempt === 1 && e.pid === first.child.pid)).toBe(true);
    expect(duplicateEffects(outbox)).toEqual([]);
    expect(await l.receipt(data.tenantId, data.runId)).toMatchObject({ status: 'completed', attempts: 1 });
  });
});
