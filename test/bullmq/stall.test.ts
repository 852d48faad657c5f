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
import { randomBytes } from 'node:crypto';
import { Job, Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ReceiptStore, type DecisionEvent, type FencedOutEvent, type ToolJobResult } from '../../src/index.js';
import { startRedis, type RedisHandle } from '../support/redis.js';
import { spawnWorkerProcess, type WorkerMessage, type WorkerProcess } from '../support/worker-process.js';

const TIMING = { LEASE_MS: '600', LOCK_MS: '1000', STALLED_MS: '500' };
const STEP_TIMEOUT_MS = 30_000;
/** Recovery of a stalled job can take BullMQ's drainDelay (5 s) on top of the lock, plus a process start. */
const JOB_TIMEOUT_MS = 45_000;
/** SIGSTOP and SIGCONT are POSIX job control; Windows has neither. */
const signalsSupported = process.platform !== 'win32';

let server: RedisHandle;
const cleanups: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  server = await startRedis();
});
afterEach(async () => {
  // Worker processes were added last, so they are SIGKILLed (stopped or not) before their connections close.
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});
afterAll(async () => {
  await server?.stop();
});

const connect = () => {
  const c = new Redis(server.url, { maxRetriesPerRequest: null });
  cleanups.push(async () => c.disconnect());
  return c;
};

/** A fresh prefix and queue per test, and `crash-worker` processes (CRASH_AT=none) on them. */
async function stallLane() {
  const prefix = `${server.prefix}${randomBytes(3).toString('hex')}`;
  const queueName = `stall-${randomBytes(3).toString('hex')}`;
  const redis = connect();
  const queue = new Queue(queueName, { connection: connect(), prefix });
  const events = new QueueEvents(queueName, { connection: connect(), prefix });
  await events.waitUntilReady();
  cleanups.push(() => queue.close(), () => events.close());
  const store = new ReceiptStore({ redis, prefix });
  const runId = `run-${randomBytes(4).toString('hex')}`;
  const data = { tenantId: 'acme', runId, calls: [{ id: 'toolu_sync', name: 'slow_sync', input: { label: 'nightly' } }] };
  return {
    prefix,
    queueName,
    redis,
    queue,
    store,
    data,
    add: () => queue.add('call', data, { attempts: 3, backoff: { type: 'fixed', delay: 100 } }),
    /** The run's one receipt. */
    receipt: async () => {
      const records = await store.listRun(data.tenantId, data.runId);
      expect(records).toHaveLength(1);
      return records[0]!;
    },
    /** Wait until the job completed (a failure rejects) and return it reloaded. */
    completed: async (job: Job) => {
      await job.waitUntilFinished(events, JOB_TIMEOUT_MS);
      const done = (await Job.fromId(queue, job.id!))!;
      expect(await done.getState()).toBe('completed');
      return done;
    },
    spawn: async (env: Record<string, string>) => {
      const w = await spawnWorkerProcess('crash-worker', {
        REDIS_URL: server.url,
        PREFIX: prefix,
        QUEUE: queueName,
        CRASH_AT: 'none',
        ...TIMING,
        ...env,
      });
      cleanups.push(() => w.signal('SIGKILL'));
      return w;
    },
  };
}

const decisionTrail = (w: WorkerProcess) =>
  w.messages
    .filter((m) => m.type === 'decision')
    .map((m) => m.event as DecisionEvent)
    .map((d) => (d.attempt === undefined ? d.decision : `${d.decision}@${d.attempt}`));
/** A woken worker's attempt is over once BullMQ refused to move its job on: its lock was gone. */
const refusedToMoveJob = (m: WorkerMessage) =>
  m.type === 'worker-error' && /Missing lock|not in the active state/i.test(String(m.message));
const LOCK_LOST = /^the BullMQ lock of job \S+ could not be renewed/;
const ofType =
  (type: string, fields: Record<string, unknown> = {}) =>
  (m: WorkerMessage) =>
    m.type === type && Object.entries(fields).every(([k, v]) => m[k] === v);

describe('a worker frozen (SIGSTOP) mid-call, then resumed (SIGCONT)', () => {
  it.skipIf(!signalsSupported)(
    'past its lease and its BullMQ lock: attempt 2 recovers the job; on waking the first is aborted and changes nothing',
    async () => {
      const l = await stallLane();
      // The first worker's slow_sync would run for two minutes: it only ends early if aborted.
      const first = await l.spawn({ SLOW_MS: '120000' });
      const job = await l.add();
      await first.waitFor(ofType('reached', { point: 'slow-begin', attempt: 1 }), STEP_TIMEOUT_MS);
      expect(decisionTrail(first)).toEqual(['execute@1']);
      expect(await l.receipt()).toMatchObject({ status: 'running', attempts: 1, effect: 'resumable' });

      await first.signal('SIGSTOP');
      // Frozen past both deadlines, judged by Redis itself: the receipt lease has lapsed on the
      // server clock and BullMQ's lock key has expired. Nothing has taken over yet.
      const lockKey = `${l.prefix}:${l.queueName}:${job.id}:lock`;
      await expect
        .poll(async () => ({ leaseExpired: (await l.receipt()).leaseExpired, lock: await l.redis.exists(lockKey) }), {
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
      const first = await l.spawn({ SLOW_MS: '120000', LOCK_MS: '60000' });
      const original = await l.add();
      await first.waitFor(ofType('reached', { point: 'slow-begin', attempt: 1 }), STEP_TIMEOUT_MS);

      await first.signal('SIGSTOP');
      await expect.poll(async () => (await l.receipt()).leaseExpired, { timeout: STEP_TIMEOUT_MS, interval: 100 }).toBe(true);
      expect(await l.redis.exists(`${l.prefix}:${l.queueName}:${original.id}:lock`)).toBe(1);

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
      const first = await l.spawn({ SLOW_MS: '120000', LEASE_MS: '10000' });
      const job = await l.add();
      await first.waitFor(ofType('reached', { point: 'slow-begin', attempt: 1 }), STEP_TIMEOUT_MS);

      await first.signal('SIGSTOP');
      const lockKey = `${l.prefix}:${l.queueName}:${job.id}:lock`;
      await expect.poll(() => l.redis.exists(lockKey), { timeout: STEP_TIMEOUT_MS, interval: 100 }).toBe(0);

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
      const trail = decisionTrail(second);
      expect(trail.at(-1)).toBe('execute@2');
      expect(trail.slice(0, -1).every((d) => d === 'wait')).toBe(true);
      // The first worker may have picked its recovered job up again before it was killed, but only to wait.
      expect(decisionTrail(first)[0]).toBe('execute@1');
      expect(decisionTrail(first).slice(1).every((d) => d === 'wait')).toBe(true);
      const [result] = (done.returnvalue as ToolJobResult).results;
      expect(JSON.parse(result!.content)).toEqual({ label: 'nightly', finishedBy: second.child.pid, attempt: 2 });
      const record = await l.receipt();
      expect(record).toMatchObject({ status: 'completed', attempts: 2 });
      expect(record.steps.begin).toEqual({ by: first.child.pid, attempt: 1 });
    },
  );
});
