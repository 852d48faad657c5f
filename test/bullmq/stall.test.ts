/**
 * Stall acceptance tests: a worker process is frozen with SIGSTOP in the
 * middle of a resumable call, another worker process takes the call over,
 * and then the first one is resumed with SIGCONT. Whatever it learns first
 * on waking (that its receipt was taken over, or that its BullMQ lock is
 * gone), its tool is aborted and nothing it does changes the outcome.
 *
 * Real Queues and Workers on the harness's Redis, real signals; every wait is
 * on observable state (IPC messages, job state, receipt fields, lock keys).
 */
import { Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import type { FencedOutEvent, ToolJobResult } from '../../src/bullmq/index.js';
import type { WorkerMessage } from '../support/worker-process.js';
import { call, decisionTrail, expectWaitsThen, jobData, RETRYING, useLanes } from './fixture.js';

const STEP_TIMEOUT_MS = 30_000;
/** Recovery of a stalled job can take BullMQ's drainDelay (5 s) on top of the lock, plus a process start. */
const JOB_TIMEOUT_MS = 45_000;
/** SIGSTOP and SIGCONT are POSIX job control; Windows has neither. */
const signalsSupported = process.platform !== 'win32';

const lane = useLanes();

/** A woken worker's attempt is over once BullMQ refused to move its job on: its lock was gone. */
const refusedToMoveJob = (m: WorkerMessage) => m.type === 'worker-error' && /Missing lock|not in the active state/i.test(String(m.message));
const LOCK_LOST = /^the BullMQ lock of job \S+ could not be renewed/;
const ofType =
  (type: string, fields: Record<string, unknown> = {}) =>
  (m: WorkerMessage) =>
    m.type === type && Object.entries(fields).every(([k, v]) => m[k] === v);

/** A fresh lane with one slow_sync call to run on it, on `crash-worker` processes (CRASH_AT=none). */
async function stallLane() {
  const l = await lane();
  const data = jobData([call('slow_sync', { label: 'nightly' }, 'toolu_sync')]);
  const add = () => l.add(data, RETRYING);
  return {
    ...l,
    data,
    add,
    /**
     * A first worker whose slow_sync would run for two minutes (it only ends
     * early if aborted), and the job, once attempt 1 has begun it there.
     */
    begin: async (env: Record<string, string> = {}) => {
      const first = await l.spawn({ SLOW_MS: '120000', ...env });
      const job = await add();
      await first.waitFor(ofType('reached', { point: 'slow-begin', attempt: 1 }), STEP_TIMEOUT_MS);
      return { first, job };
    },
    /** BullMQ's lock key of the job. */
    lockKey: (job: Job) => `${l.prefix}:${l.queueName}:${job.id}:lock`,
    /** The run's one receipt. */
    receipt: () => l.receipt(data.tenantId, data.runId),
    /** Wait until the job completed (or failed) and expect it completed; return it reloaded. */
    completed: async (job: Job) => {
      const done = await l.settle(job, JOB_TIMEOUT_MS);
      expect(await done.getState()).toBe('completed');
      return done;
    },
  };
}

describe('a worker frozen (SIGSTOP) mid-call, then resumed (SIGCONT)', () => {
  it.skipIf(!signalsSupported)(
    'past its lease and its BullMQ lock: attempt 2 recovers the job; on waking the first is aborted and changes nothing',
    async () => {
      const l = await stallLane();
      const { first, job } = await l.begin();
      expect(decisionTrail(first)).toEqual(['execute@1']);
      expect(await l.receipt()).toMatchObject({ status: 'running', attempts: 1, effect: 'resumable' });

      await first.signal('SIGSTOP');
      // Frozen past both deadlines, judged by Redis itself: the receipt lease has lapsed on the
      // server clock and BullMQ's lock key has expired. Nothing has taken over yet.
      await expect
        .poll(async () => ({ leaseExpired: (await l.receipt()).leaseExpired, lock: await l.redis.exists(l.lockKey(job)) }), {
          timeout: STEP_TIMEOUT_MS,
          interval: 100,
        })
        .toEqual({ leaseExpired: true, lock: 0 });

      // The second worker recovers the stalled job and, once it has taken over, finishes quickly.
      const second = await l.spawn({ SLOW_MS: '200' });
      const done = await l.completed(job);
      expect(done.stalledCounter).toBeGreaterThanOrEqual(1);
      await second.waitFor(ofType('settled'), STEP_TIMEOUT_MS);
      expect(decisionTrail(second)).toEqual(['execute@2']);
      expect(second.messages.find(ofType('slow-ended'))).toMatchObject({ aborted: false, attempt: 2 });
      const [result] = (done.returnvalue as ToolJobResult).results;
      expect(result).toMatchObject({ outcome: 'executed', tool_use_id: 'toolu_sync' });
      expect(JSON.parse(result!.content)).toEqual({ label: 'nightly', finishedBy: second.child.pid, attempt: 2 });

      const takenOver = await l.receipt();
      expect(takenOver).toMatchObject({ status: 'completed', attempts: 2, result: { content: result!.content } });
      // The step attempt 1 recorded before it froze was carried over, not run again.
      expect(takenOver.steps.begin).toEqual({ by: first.child.pid, attempt: 1 });
      expect(first.messages.map((m) => m.type)).toEqual(['ready', 'decision', 'reached']);

      // Wake the first worker: its tool is aborted, and its attempt ends without settling anything.
      await first.signal('SIGCONT');
      const ended = await first.waitFor(ofType('slow-ended'), STEP_TIMEOUT_MS);
      expect(ended).toMatchObject({ aborted: true, attempt: 1 });
      await first.waitFor(refusedToMoveJob, STEP_TIMEOUT_MS);
      expect(first.messages.filter(ofType('settled'))).toEqual([]);
      // On waking, two signals race to abort ctx.signal: the lease heartbeat meeting the fence
      // (FencedOutError), or BullMQ's failed lock renewal, which `attach` turns into a
      // JobLockLostError. Either way the attempt learns it was taken over and says so once:
      // from a heartbeat, or by reading the receipt after the abort.
      const fencedOut = first.messages.filter(ofType('fencedOut')).map((m) => m.event as FencedOutEvent);
      if (ended.reasonCode === 'receipt.fenced_out') {
        expect(fencedOut).toEqual([expect.objectContaining({ attempt: 1, during: 'heartbeat', receiptKey: takenOver.redisKey })]);
      } else {
        expect(ended).toMatchObject({ reasonCode: 'job.lock_lost' });
        expect(ended.reasonMessage).toMatch(LOCK_LOST);
        // The heartbeat already in flight may learn it first; either way it is reported once.
        expect(fencedOut).toEqual([
          expect.objectContaining({ attempt: 1, during: expect.stringMatching(/^(abort|heartbeat)$/), receiptKey: takenOver.redisKey }),
        ]);
      }

      // Nothing the woken attempt did changed the outcome.
      expect(await l.receipt()).toMatchObject({ status: 'completed', attempts: 2, result: takenOver.result, steps: takenOver.steps });
      const after = (await Job.fromId(l.queue, job.id!))!;
      expect(await after.getState()).toBe('completed');
      expect(after.returnvalue).toEqual(done.returnvalue);
    },
  );

  it.skipIf(!signalsSupported)(
    'past its lease but not its lock: a duplicate delivery takes the call over; the woken attempt is fenced out and its job then replays',
    async () => {
      const l = await stallLane();
      // A long BullMQ lock: the frozen worker keeps its job, so only the receipt lease lapses.
      const { first, job: original } = await l.begin({ LOCK_MS: '60000' });

      await first.signal('SIGSTOP');
      await expect.poll(async () => (await l.receipt()).leaseExpired, { timeout: STEP_TIMEOUT_MS, interval: 100 }).toBe(true);
      expect(await l.redis.exists(l.lockKey(original))).toBe(1);

      // The same call delivered again (a retried turn): another worker takes the expired attempt over.
      const second = await l.spawn({ SLOW_MS: '200' });
      const duplicate = await l.add();
      const dupDone = await l.completed(duplicate);
      await second.waitFor(ofType('settled'), STEP_TIMEOUT_MS);
      expect(decisionTrail(second)).toEqual(['execute@2']);
      const [dupResult] = (dupDone.returnvalue as ToolJobResult).results;
      expect(dupResult).toMatchObject({ outcome: 'executed' });
      const takenOver = await l.receipt();
      expect(takenOver).toMatchObject({ status: 'completed', attempts: 2 });
      expect(await original.getState()).toBe('active');

      // Wake the first worker: its heartbeat meets the fence, which aborts its tool with the fence's reason.
      await first.signal('SIGCONT');
      const fenced = await first.waitFor(ofType('fencedOut'), STEP_TIMEOUT_MS);
      expect(fenced.event).toMatchObject({ attempt: 1, during: 'heartbeat', receiptKey: takenOver.redisKey });
      const ended = await first.waitFor(ofType('slow-ended'), STEP_TIMEOUT_MS);
      expect(ended).toMatchObject({ aborted: true, reasonCode: 'receipt.fenced_out', attempt: 1 });

      // The fenced-out failure is retryable: the original job comes back, claims, and replays attempt 2's result.
      const originalDone = await l.completed(original);
      const [replayed] = (originalDone.returnvalue as ToolJobResult).results;
      expect(replayed).toMatchObject({ outcome: 'replayed', content: dupResult!.content });
      expect(originalDone.attemptsMade).toBe(2);
      expect(first.messages.filter(ofType('settled'))).toEqual([]);
      expect(await l.receipt()).toMatchObject({ status: 'completed', attempts: 2, result: takenOver.result });
    },
  );

  it.skipIf(!signalsSupported)(
    'past its lock but not its lease: on waking it is aborted for the lost lock, writes nothing, and the call is taken over once the lease lapses',
    async () => {
      const l = await stallLane();
      // A lease far longer than the lock, so the receipt still holds when the worker wakes.
      const { first, job } = await l.begin({ LEASE_MS: '10000' });

      await first.signal('SIGSTOP');
      await expect.poll(() => l.redis.exists(l.lockKey(job)), { timeout: STEP_TIMEOUT_MS, interval: 100 }).toBe(0);

      // Wake it with no other worker around: nobody can have taken the receipt over, only the lock is gone.
      await first.signal('SIGCONT');
      const ended = await first.waitFor(ofType('slow-ended'), STEP_TIMEOUT_MS);
      expect(ended).toMatchObject({ aborted: true, reasonCode: 'job.lock_lost', attempt: 1 });
      expect(ended.reasonMessage).toMatch(LOCK_LOST);
      await first.waitFor(refusedToMoveJob, STEP_TIMEOUT_MS);
      // Cut off mid-effect, its failure proves nothing: the receipt is neither failed nor fenced,
      // just left running under attempt 1 for its lease to lapse.
      expect(first.messages.filter((m) => m.type === 'fencedOut' || m.type === 'settled')).toEqual([]);
      expect(await l.receipt()).toMatchObject({ status: 'running', attempts: 1, error: null, tier: null });

      // Retire the first worker (its slow_sync would hold a new attempt for minutes) and let another one finish.
      await first.signal('SIGKILL');
      const second = await l.spawn({ SLOW_MS: '200' });
      const done = await l.completed(job);
      await second.waitFor(ofType('settled'), STEP_TIMEOUT_MS);
      // It may find the lease still live and wait first; once the lease lapses, attempt 2 takes over.
      expectWaitsThen(decisionTrail(second), 'execute@2');
      // The first worker may have picked its recovered job up again before it was killed, but only to wait.
      expect(decisionTrail(first)[0]).toBe('execute@1');
      expect(
        decisionTrail(first)
          .slice(1)
          .every((d) => d === 'wait'),
      ).toBe(true);
      const [result] = (done.returnvalue as ToolJobResult).results;
      expect(JSON.parse(result!.content)).toEqual({ label: 'nightly', finishedBy: second.child.pid, attempt: 2 });
      const record = await l.receipt();
      expect(record).toMatchObject({ status: 'completed', attempts: 2 });
      expect(record.steps.begin).toEqual({ by: first.child.pid, attempt: 1 });
    },
  );
});
