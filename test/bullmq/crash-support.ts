/**
 * Helpers of the crash tests: a job frozen at a chosen point on a real worker
 * process, a SIGKILL, a takeover worker, and what to expect afterwards.
 */
import type { Job } from 'bullmq';
import { expect } from 'vitest';
import type { ToolJobResult } from '../../src/bullmq/index.js';
import { readOutbox } from '../../examples/outbox-tools.js';
import type { WorkerMessage, WorkerProcess } from '../support/worker-process.js';
import { call, decisionTrail, expectWaitsThen, jobData, RETRYING, type Lane } from './fixture.js';

/** Generous bounds: recovery needs a lock expiry plus a stalled check or two, and child processes start in ~2 s. */
export const STEP_TIMEOUT_MS = 30_000;
export const JOB_TIMEOUT_MS = 45_000;

export const reached = (point: string) => (m: WorkerMessage) => m.type === 'reached' && m.point === point;

export const emailJob = () =>
  jobData([call('send_email', { to: 'ops@example.com', subject: 'Quarterly report', body: 'Attached.' }, 'toolu_email')]);
export const ticketJob = () => jobData([call('create_ticket', { title: 'Printer on fire', assignee: 'facilities' }, 'toolu_ticket')]);
export type CrashJobData = ReturnType<typeof emailJob>;

/** Side effects landed so far on this lane. */
export const outboxOf = (l: Lane) => readOutbox(l.redis, l.prefix);

/**
 * A fresh lane, a first worker process that freezes at `crashAt`, and a job
 * (retries allowed) that has reached that point on it.
 */
export async function frozenAt(lane: () => Promise<Lane>, crashAt: string, makeJob: () => CrashJobData, env: Record<string, string> = {}) {
  const l = await lane();
  const first = await l.spawn({ ...env, CRASH_AT: crashAt });
  const data = makeJob();
  const job = await l.add(data, RETRYING);
  await first.waitFor(reached(crashAt), STEP_TIMEOUT_MS);
  return { l, first, data, job };
}

/**
 * Kill `first` where it froze and let a CRASH_AT=none worker recover the job
 * through BullMQ's stalled-job check (with `env` added). Returns the takeover worker.
 */
export async function killAndTakeOver(l: Lane, first: WorkerProcess, env: Record<string, string> = {}): Promise<WorkerProcess> {
  await first.signal('SIGKILL');
  return l.spawn({ ...env, CRASH_AT: 'none' });
}

/** Wait until the job completed (or failed) and expect it completed, with no failure recorded. */
export const expectCompleted = async (l: Lane, job: Job) => {
  const done = await l.settle(job, JOB_TIMEOUT_MS);
  expect(done.failedReason).toBeUndefined();
  expect(await done.getState()).toBe('completed');
  return done;
};

/** The job completed its one call as `executed`, settled by attempt 2 on the takeover worker. */
export const expectExecutedByTakeover = async (l: Lane, job: Job, takeover: WorkerProcess) => {
  const done = await expectCompleted(l, job);
  expect((done.returnvalue as ToolJobResult).results.map((r) => r.outcome)).toEqual(['executed']);
  await takeover.waitFor((m) => m.type === 'settled', STEP_TIMEOUT_MS);
  expectWaitsThen(decisionTrail(takeover), 'execute@2');
  return done;
};

export const ambiguousReceipt = async (l: Lane, tenantId: string, runId: string, receiptKey: string) => {
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

export const expectUnrecoverablyAmbiguous = async (l: Lane, job: Job, takeover: WorkerProcess) => {
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
