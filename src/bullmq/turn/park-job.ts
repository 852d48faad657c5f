/**
 * Parks a job until a time on the Redis server's clock, for a call that waits
 * for a live attempt (or a limit), and promotes a parked job (of this queue,
 * or of another on the same Redis), for a call whose turn for a slot of an
 * in-flight cap came.
 */
import { Queue, type Job } from 'bullmq';
import type { ToolCallReceiptKey } from '../../core/identity.js';
import { PARKED_DELIVERY_UNWIND_MS } from '../../approvals/parked-job.js';
import type { AttemptJob } from '../../redis/receipts/reads/record.js';

/** The one method of BullMQ's queue backend this module needs. */
interface DelayingBackend {
  moveToDelayed(jobId: string, timestamp: number, delay: number, token?: string, opts?: { skipAttempt?: boolean }): Promise<unknown>;
}

export { PARKED_DELIVERY_UNWIND_MS };

/**
 * Park an active job in BullMQ's delayed set until `serverNowMs + delayMs`
 * (at least {@link PARKED_DELIVERY_UNWIND_MS} on), without using one of its
 * attempts.
 *
 * BullMQ stores a delayed job under `timestamp + delay`, and the public
 * `job.moveToDelayed(at)` takes `timestamp` from this worker's `Date.now()`
 * (and clips a target in its past to "now"). Workers fetching jobs promote
 * the delayed ones due by their own clocks, so a parking worker whose clock
 * runs ten minutes fast would park the job ten minutes late for everyone
 * else. The claim has just read the Redis server's clock, so the target is
 * stated on that clock, which the rest of a healthy fleet agrees with.
 *
 * The low-level method lives on the job's `backend` in BullMQ 6 and on its
 * `scripts` in BullMQ 5, with the same arguments; only a job with neither
 * falls back to the public method on the local clock.
 */
export async function parkJobOnServerClock(job: Job, token: string | undefined, serverNowMs: number, delayMs: number): Promise<void> {
  const parkedMs = Math.max(delayMs, PARKED_DELIVERY_UNWIND_MS);
  const internals = job as unknown as { backend?: Partial<DelayingBackend>; scripts?: Partial<DelayingBackend> };
  const backend = typeof internals.backend?.moveToDelayed === 'function' ? internals.backend : internals.scripts;
  if (job.id !== undefined && typeof backend?.moveToDelayed === 'function') {
    await (backend as DelayingBackend).moveToDelayed(job.id, serverNowMs, parkedMs, token, { skipAttempt: true });
    return;
  }
  await job.moveToDelayed(Date.now() + parkedMs, token);
}

/**
 * A park's `comeBack` for a call waiting on its receipt's state (a
 * person's decision): whether the receipt has left `status`,
 * read once the job is parked, since what ends the wait looks for the job
 * in the delayed set to promote it and finds nothing while it still runs.
 */
export function leftStatus(
  receipts: { inspect(key: ToolCallReceiptKey): Promise<{ readonly status: string } | null> },
  key: ToolCallReceiptKey,
  status: string,
): () => Promise<boolean> {
  return async () => (await receipts.inspect(key))?.status !== status;
}

/**
 * Jobs a release named to wake while they still ran: in a turn side by
 * side, the call that freed a cap's slot woke its own job, whose waiting
 * call was to be parked (promoting an active job does nothing). The job
 * comes back at once once parked ({@link takeWokenWhileRunning}).
 */
const wokenWhileRunning = new WeakSet<Job>();

/** Notes that `job` was woken while it ran (see `wokenWhileRunning`). */
export function noteWokenWhileRunning(job: Job): void {
  wokenWhileRunning.add(job);
}

/** Whether `job` was woken while it ran, and forgets it: a park's `comeBack`. */
export function takeWokenWhileRunning(job: Job): boolean {
  return wokenWhileRunning.delete(job);
}

/**
 * Promotes `job`, just parked by its own processor, once its delivery has
 * unwound ({@link PARKED_DELIVERY_UNWIND_MS}); best effort, as
 * {@link promoteParkedJob}: when it does not happen (the process ended
 * first) the job comes back when its park ends.
 */
export function comeBackSoon(job: Job, own: AttemptJob): void {
  setTimeout(() => void promoteParkedJob(job, own, own), PARKED_DELIVERY_UNWIND_MS).unref();
}

/** The one method of BullMQ's queue backend {@link promoteParkedJob} needs. */
interface PromotingBackend {
  promote(jobId: string): Promise<unknown>;
}

/**
 * Promote the delayed job `parked` so it runs now: a call parked in line
 * for a slot of an in-flight cap, woken by the call that freed one (`job`,
 * the job of that call, whose queue and prefix `own` names as a claim
 * records them: `attemptJobOf`). A job of `job`'s own queue is promoted through
 * `job`'s backend (BullMQ 6) or scripts (BullMQ 5), as
 * {@link parkJobOnServerClock} parks; one of another queue through a Queue
 * of that name and prefix over the Redis connection `job`'s worker already
 * has (see {@link queueBeside}). `false` when it could not (a queue not on
 * Redis, the job not delayed any more, or gone): the woken job still runs
 * when its park ends.
 */
export async function promoteParkedJob(job: Job, own: AttemptJob | undefined, parked: AttemptJob): Promise<boolean> {
  try {
    const sameQueue = own !== undefined && own.queue === parked.queue && own.prefix === parked.prefix;
    const holder = sameQueue ? job : await queueBeside(job, parked);
    const internals = holder as unknown as { backend?: Partial<PromotingBackend>; scripts?: Partial<PromotingBackend> } | undefined;
    const backend = typeof internals?.backend?.promote === 'function' ? internals.backend : internals?.scripts;
    if (typeof backend?.promote !== 'function') return false;
    await (backend as PromotingBackend).promote(parked.id);
    return true;
  } catch {
    return false;
  }
}

/** Queues made to promote jobs of other queues, per Redis connection they share, by prefix and name. */
const queuesBeside = new WeakMap<object, Map<string, Queue>>();
/**
 * The most queues made per connection: a cap's line names its jobs' queues
 * as stored in Redis, so a line written by hand cannot make a worker keep
 * Queues without end (past it, those jobs run when their parks end).
 */
const MAX_QUEUES_BESIDE = 64;

/**
 * A Queue for `parked`'s queue over the Redis connection `job`'s worker
 * uses (BullMQ 6: its backend's client; 5: its own): made once per
 * connection and queue, it opens no connection of its own, so it needs no
 * closing; its errors are the connection's, which the worker reports. No
 * Queue for a worker whose queue is not on Redis (BullMQ on PostgreSQL).
 */
async function queueBeside(job: Job, parked: AttemptJob): Promise<Queue | undefined> {
  const { queue } = job as unknown as { queue: { backend?: { client?: Promise<unknown> }; client?: Promise<unknown> } };
  const client = (await (queue.backend?.client ?? queue.client)) as { evalsha?: unknown; duplicate?: unknown } | undefined;
  if (typeof client !== 'object' || client === null || typeof client.evalsha !== 'function' || typeof client.duplicate !== 'function') {
    return undefined;
  }
  let queues = queuesBeside.get(client);
  if (queues === undefined) queuesBeside.set(client, (queues = new Map()));
  const name = `${parked.prefix}\u0000${parked.queue}`;
  let beside = queues.get(name);
  if (beside === undefined) {
    if (queues.size >= MAX_QUEUES_BESIDE) return undefined;
    beside = new Queue(parked.queue, { connection: client as ConstructorParameters<typeof Queue>[1]['connection'], prefix: parked.prefix });
    beside.on('error', () => undefined);
    queues.set(name, beside);
  }
  return beside;
}
