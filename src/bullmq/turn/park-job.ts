/**
 * Parks a job until a time on the Redis server's clock, for a call that waits
 * for a live attempt (or a limit), and promotes a parked job of the same
 * queue, for a call whose turn for a slot of an in-flight cap came.
 */
import type { Job } from 'bullmq';

/** The one method of BullMQ's queue backend this module needs. */
interface DelayingBackend {
  moveToDelayed(jobId: string, timestamp: number, delay: number, token?: string, opts?: { skipAttempt?: boolean }): Promise<unknown>;
}

/**
 * Park an active job in BullMQ's delayed set until `serverNowMs + delayMs`,
 * without using one of its attempts.
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
  const internals = job as unknown as { backend?: Partial<DelayingBackend>; scripts?: Partial<DelayingBackend> };
  const backend = typeof internals.backend?.moveToDelayed === 'function' ? internals.backend : internals.scripts;
  if (job.id !== undefined && typeof backend?.moveToDelayed === 'function') {
    await (backend as DelayingBackend).moveToDelayed(job.id, serverNowMs, delayMs, token, { skipAttempt: true });
    return;
  }
  await job.moveToDelayed(Date.now() + delayMs, token);
}

/** The one method of BullMQ's queue backend {@link promoteJobOfQueue} needs. */
interface PromotingBackend {
  promote(jobId: string): Promise<unknown>;
}

/**
 * Promote the delayed job `jobId` of `job`'s own queue, so it runs now: a
 * call parked in line for a slot of an in-flight cap, woken by the call
 * that freed one. Through the job's backend (BullMQ 6) or scripts (BullMQ 5),
 * as {@link parkJobOnServerClock} parks. `false` when it could not (no such
 * backend, the job not delayed any more, or gone): the woken job still runs
 * when its park ends.
 */
export async function promoteJobOfQueue(job: Job, jobId: string): Promise<boolean> {
  const internals = job as unknown as { backend?: Partial<PromotingBackend>; scripts?: Partial<PromotingBackend> };
  const backend = typeof internals.backend?.promote === 'function' ? internals.backend : internals.scripts;
  if (typeof backend?.promote !== 'function') return false;
  try {
    await (backend as PromotingBackend).promote(jobId);
    return true;
  } catch {
    return false;
  }
}
