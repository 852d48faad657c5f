/**
 * Crash acceptance tests: a real worker process is SIGKILLed at a chosen
 * point of a tool call, and a second worker process picks the stalled job up
 * through BullMQ's own stalled-job recovery. Nothing is mocked: real Queues,
 * real Workers, the harness's Redis, and an outbox of landed side effects.
 *
 * Every wait is on observable state (IPC messages, job state, receipt
 * fields); leases and locks are short so recovery takes seconds.
 */
import { randomBytes } from 'node:crypto';
import { Job, Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ReceiptStore, type DecisionEvent, type ReceiptRecord, type ToolJobResult } from '../../src/index.js';
import { duplicateEffects, providerDeduped, readOutbox } from '../../examples/outbox-tools.js';
import { startRedis, type RedisHandle } from '../support/redis.js';
import { spawnWorkerProcess, type WorkerMessage, type WorkerProcess } from '../support/worker-process.js';

/** Short enough for fast recovery, long enough for a loaded 2-core machine to keep renewing them. */
const TIMING = { LEASE_MS: '600', LOCK_MS: '1000', STALLED_MS: '500' };
/** Generous bounds: recovery needs a lock expiry plus a stalled check or two, and child processes start in ~2 s. */
const STEP_TIMEOUT_MS = 30_000;
const JOB_TIMEOUT_MS = 45_000;

let server: RedisHandle;
const cleanups: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  server = await startRedis();
});
afterEach(async () => {
  // Reverse order: worker processes (added last) die before the connections they use close.
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});
afterAll(async () => {
  await server?.stop();
});

interface CrashLane {
  readonly prefix: string;
  readonly redis: Redis;
  readonly queue: Queue;
  readonly store: ReceiptStore;
  /** A `crash-worker` process on this lane's queue and prefix. */
  spawn(crashAt: string, env?: Record<string, string>): Promise<WorkerProcess>;
  /** Wait until the job completed or failed (or the timeout passed) and return it reloaded. */
  finished(job: Job): Promise<Job>;
  /** The one receipt of a run. */
  receipt(tenantId: string, runId: string): Promise<ReceiptRecord>;
}

/** A fresh prefix and queue, so tests never see each other's jobs, receipts or outbox. */
async function crashLane(): Promise<CrashLane> {
  const prefix = `${server.prefix}${randomBytes(3).toString('hex')}`;
  const queueName = `crash-${randomBytes(3).toString('hex')}`;
  const connect = () => {
    const c = new Redis(server.url, { maxRetriesPerRequest: null });
    cleanups.push(async () => c.disconnect());
    return c;
  };
  const redis = connect();
  const queue = new Queue(queueName, { connection: connect(), prefix });
  const events = new QueueEvents(queueName, { connection: connect(), prefix });
  await events.waitUntilReady();
  cleanups.push(() => queue.close(), () => events.close());
  const store = new ReceiptStore({ redis, prefix });

  return {
    prefix,
    redis,
    queue,
    store,
    async spawn(crashAt, env = {}) {
      const worker = await spawnWorkerProcess('crash-worker', {
        REDIS_URL: server.url,
        PREFIX: prefix,
        QUEUE: queueName,
        CRASH_AT: crashAt,
        ...TIMING,
        ...env,
      });
      cleanups.push(() => worker.signal('SIGKILL'));
      return worker;
    },
    async finished(job) {
      // Rejects when the job fails (or on timeout); either way the reloaded job says what happened.
      await job.waitUntilFinished(events, JOB_TIMEOUT_MS).catch(() => undefined);
      const reloaded = await Job.fromId(queue, job.id!);
      const state = await reloaded?.getState();
      if (state !== 'completed' && state !== 'failed') {
        throw new Error(`job ${job.id} did not finish within ${JOB_TIMEOUT_MS} ms; it is ${state}`);
      }
      return reloaded!;
    },
    async receipt(tenantId, runId) {
      const records = await store.listRun(tenantId, runId);
      expect(records).toHaveLength(1);
      return records[0]!;
    },
  };
}

const reached = (point: string) => (m: WorkerMessage) => m.type === 'reached' && m.point === point;
const decisionsOf = (w: WorkerProcess): DecisionEvent[] =>
  w.messages.filter((m) => m.type === 'decision').map((m) => m.event as DecisionEvent);
/** Decisions as `kind` or `kind@attempt`, e.g. `['wait', 'execute@2']`. */
const decisionTrail = (w: WorkerProcess) => decisionsOf(w).map((d) => (d.attempt === undefined ? d.decision : `${d.decision}@${d.attempt}`));
/** A takeover worker may first find the dead attempt's lease still live and wait; nothing else may precede its verdict. */
const expectWaitsThen = (trail: string[], verdict: string) => {
  expect(trail.at(-1)).toBe(verdict);
  expect(trail.slice(0, -1).every((d) => d === 'wait')).toBe(true);
};

const runIds = () => ({ tenantId: 'acme', runId: `run-${randomBytes(4).toString('hex')}` });
const emailJob = () => ({
  ...runIds(),
  calls: [{ id: 'toolu_email', name: 'send_email', input: { to: 'ops@example.com', subject: 'Quarterly report', body: 'Attached.' } }],
});
const ticketJob = () => ({
  ...runIds(),
  calls: [{ id: 'toolu_ticket', name: 'create_ticket', input: { title: 'Printer on fire', assignee: 'facilities' } }],
});
/** Retries are allowed, so a job that fails anyway failed unrecoverably. */
const JOB_OPTS = { attempts: 3, backoff: { type: 'fixed', delay: 100 } } as const;

/**
 * Kill `first` where it froze and let a CRASH_AT=none worker recover the job
 * through BullMQ's stalled-job check. Returns the takeover worker.
 */
async function killAndTakeOver(l: CrashLane, first: WorkerProcess): Promise<WorkerProcess> {
  await first.signal('SIGKILL');
  return l.spawn('none');
}

const ambiguousReceipt = async (l: CrashLane, tenantId: string, runId: string, receiptKey: string) => {
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

const expectUnrecoverablyAmbiguous = async (l: CrashLane, job: Job, takeover: WorkerProcess) => {
  const done = await l.finished(job);
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
    const l = await crashLane();
    const first = await l.spawn('before-effect');
    const data = emailJob();
    const job = await l.queue.add('call', data, JOB_OPTS);
    await first.waitFor(reached('before-effect'), STEP_TIMEOUT_MS);
    expect(decisionTrail(first)).toEqual(['execute@1']);
    const receiptKey = decisionsOf(first)[0]!.receiptKey;

    const takeover = await killAndTakeOver(l, first);
    await expectUnrecoverablyAmbiguous(l, job, takeover);

    expect(await readOutbox(l.redis, l.prefix)).toEqual([]);
    await ambiguousReceipt(l, data.tenantId, data.runId, receiptKey);
  });

  it('resumable create_ticket: attempt 2 takes over and runs every step exactly once', async () => {
    const l = await crashLane();
    const first = await l.spawn('before-effect');
    const data = ticketJob();
    const job = await l.queue.add('call', data, JOB_OPTS);
    await first.waitFor(reached('before-effect'), STEP_TIMEOUT_MS);
    expect(decisionTrail(first)).toEqual(['execute@1']);

    const takeover = await killAndTakeOver(l, first);
    const done = await l.finished(job);
    expect(done.failedReason).toBeUndefined();
    expect(await done.getState()).toBe('completed');
    expect((done.returnvalue as ToolJobResult).results.map((r) => r.outcome)).toEqual(['executed']);
    await takeover.waitFor((m) => m.type === 'settled', STEP_TIMEOUT_MS);
    expectWaitsThen(decisionTrail(takeover), 'execute@2');

    const outbox = await readOutbox(l.redis, l.prefix);
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
    const l = await crashLane();
    const first = await l.spawn('after-effect:send');
    const data = emailJob();
    const job = await l.queue.add('call', data, JOB_OPTS);
    await first.waitFor(reached('after-effect:send'), STEP_TIMEOUT_MS);
    const receiptKey = decisionsOf(first)[0]!.receiptKey;
    expect(await readOutbox(l.redis, l.prefix)).toHaveLength(1);

    const takeover = await killAndTakeOver(l, first);
    await expectUnrecoverablyAmbiguous(l, job, takeover);

    const outbox = await readOutbox(l.redis, l.prefix);
    expect(outbox.map((e) => [e.tool, e.part, e.attempt, e.pid])).toEqual([['send_email', 'send', 1, first.child.pid]]);
    await ambiguousReceipt(l, data.tenantId, data.runId, receiptKey);
  });

  it('resumable create_ticket killed after `create` landed: attempt 2 skips reserve, the provider absorbs create, notify lands once', async () => {
    const l = await crashLane();
    const first = await l.spawn('after-effect:create');
    const data = ticketJob();
    const job = await l.queue.add('call', data, JOB_OPTS);
    await first.waitFor(reached('after-effect:create'), STEP_TIMEOUT_MS);
    // What the crash leaves: reserve landed and recorded, create landed but not recorded.
    const before = await l.receipt(data.tenantId, data.runId);
    expect(Object.keys(before.steps)).toEqual(['reserve']);
    expect((await readOutbox(l.redis, l.prefix)).map((e) => e.part)).toEqual(['reserve', 'create']);

    const takeover = await killAndTakeOver(l, first);
    const done = await l.finished(job);
    expect(done.failedReason).toBeUndefined();
    expect(await done.getState()).toBe('completed');
    expect((done.returnvalue as ToolJobResult).results.map((r) => r.outcome)).toEqual(['executed']);
    await takeover.waitFor((m) => m.type === 'settled', STEP_TIMEOUT_MS);
    expectWaitsThen(decisionTrail(takeover), 'execute@2');

    const outbox = await readOutbox(l.redis, l.prefix);
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
    const l = await crashLane();
    const first = await l.spawn('after-complete');
    const data = makeJob();
    const job = await l.queue.add('call', data, JOB_OPTS);
    await first.waitFor(reached('after-complete'), STEP_TIMEOUT_MS);
    const settled = await first.waitFor((m) => m.type === 'settled', STEP_TIMEOUT_MS);
    expect(settled.event).toMatchObject({ attempt: 1, outcome: 'executed' });
    const completed = await l.receipt(data.tenantId, data.runId);
    expect(completed).toMatchObject({ status: 'completed', attempts: 1 });
    const landed = await readOutbox(l.redis, l.prefix);
    expect(await job.getState()).toBe('active');

    const takeover = await killAndTakeOver(l, first);
    const done = await l.finished(job);
    expect(done.failedReason).toBeUndefined();
    expect(await done.getState()).toBe('completed');
    await takeover.waitFor((m) => m.type === 'decision', STEP_TIMEOUT_MS);
    expect(decisionTrail(takeover)).toEqual(['replay']);
    const [result] = (done.returnvalue as ToolJobResult).results;
    expect(result).toMatchObject({ outcome: 'replayed', tool_use_id: data.calls[0]!.id });
    expect(result!.content).toBe((completed.result as { content: string }).content);

    const outbox = await readOutbox(l.redis, l.prefix);
    expect(outbox).toEqual(landed);
    expect(outbox.length).toBe(data.calls[0]!.name === 'send_email' ? 1 : 3);
    expect(outbox.every((e) => e.attempt === 1 && e.pid === first.child.pid)).toBe(true);
    expect(duplicateEffects(outbox)).toEqual([]);
    expect(await l.receipt(data.tenantId, data.runId)).toMatchObject({ status: 'completed', attempts: 1 });
  });
});
