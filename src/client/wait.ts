/**
 * Waiting for a turn's job to end, and how it ended (or why the wait stopped
 * first).
 */
import type { EventEmitter } from 'node:events';
import { Job, type Queue, type QueueEvents } from 'bullmq';
import { answeredBeforeApprovalOf, awaitingApprovalOf, type AwaitingApprovalCall } from '../bullmq/outcomes/approval-progress.js';
import type { ToolResultBlock } from '../bullmq/job-data.js';
import type { UnfinishedJobState } from './errors.js';

/** A job's end as the job holds it. */
type Finished =
  { readonly status: 'completed'; readonly returnvalue: unknown } | { readonly status: 'failed'; readonly failedReason: string };

/** How a job ended, or why the wait for it stopped first (`jobState`: where the job stood then, if it could be read). */
export type JobEnd =
  | Finished
  | { readonly status: 'timeout'; readonly jobState: UnfinishedJobState | undefined }
  | { readonly status: 'aborted'; readonly reason: unknown }
  /** With `untilApproval`: the job is parked until a person decides on these calls; `answered` ran before it was. */
  | {
      readonly status: 'awaiting_approval';
      readonly calls: readonly AwaitingApprovalCall[];
      readonly answered: readonly ToolResultBlock[];
    };

/**
 * Wait for a job to finish through BullMQ's `QueueEvents`, as
 * `job.waitUntilFinished` does (listen first, then look at the job's state,
 * so a job that finished in between is not missed), but also stop on a
 * timeout or an AbortSignal, removing every listener either way. Stopping
 * the wait never touches the job. `whileListening` runs once the listeners
 * are in place and the `QueueEvents` is ready (the client enqueues there, so
 * even a job that finishes and is removed at once is seen); what it throws
 * is thrown.
 *
 * `timeoutMs` limits the waiting only: its clock starts after
 * `whileListening` and a first look at the job, so a job that had already
 * finished gives its end whatever the limit (even 0). When it runs out, the
 * job is looked at once more: one that finished meanwhile gives its end, any
 * other gives a timeout saying where the job stood.
 *
 * With `untilApproval`, the wait also ends when the job is parked (delayed)
 * with calls awaiting approval on its progress (see approval-progress.ts).
 *
 * The job is also looked at every {@link LOOK_AGAIN_EVERY_MS} while the wait
 * lasts: an event the `QueueEvents` never delivered (its stream read reset
 * on a loaded machine, say) then costs that long at most, not the whole
 * timeout, or a wait with none that never ends.
 */
export async function waitForJobEnd(
  queue: Queue,
  queueEvents: QueueEvents,
  jobId: string,
  options: { timeoutMs?: number; signal?: AbortSignal; untilApproval?: boolean } = {},
  whileListening: () => Promise<void> = async () => undefined,
): Promise<JobEnd> {
  const { timeoutMs, signal } = options;
  if (signal?.aborted) return { status: 'aborted', reason: signal.reason };
  let settled = false;
  let resolve!: (end: JobEnd) => void;
  const ended = new Promise<JobEnd>((r) => (resolve = r));
  const settle = (end: JobEnd) => {
    settled = true;
    resolve(end);
  };
  const onCompleted = (args: { returnvalue: unknown }) => settle({ status: 'completed', returnvalue: args.returnvalue });
  const onFailed = (args: { failedReason: string }) => settle({ status: 'failed', failedReason: args.failedReason ?? '' });
  const onAbort = () => settle({ status: 'aborted', reason: signal?.reason });
  const onParked = () =>
    void parkedForApproval(queue, jobId).then((parked) => {
      if (parked !== undefined && !settled) settle({ status: 'awaiting_approval', ...parked });
    });
  // BullMQ emits per-job events (`completed:<id>`) that its listener types do not list.
  const perJob = queueEvents as unknown as EventEmitter;
  perJob.on(`completed:${jobId}`, onCompleted);
  perJob.on(`failed:${jobId}`, onFailed);
  signal?.addEventListener('abort', onAbort, { once: true });
  if (options.untilApproval) for (const event of PARKED_EVENTS) perJob.on(`${event}:${jobId}`, onParked);
  let timer: NodeJS.Timeout | undefined;
  let lookAgain: NodeJS.Timeout | undefined;
  try {
    await queueEvents.waitUntilReady();
    await whileListening();
    const first = await lookAt(queue, jobId);
    if (first !== undefined && first.status !== 'unfinished') settle(first);
    else if (options.untilApproval) onParked();
    if (!settled) {
      lookAgain = setInterval(() => {
        void lookAt(queue, jobId).then((look) => {
          if (settled || look === undefined) return;
          if (look.status !== 'unfinished') settle(look);
          else if (options.untilApproval && look.jobState === 'delayed') onParked();
        });
      }, LOOK_AGAIN_EVERY_MS);
      lookAgain.unref();
    }
    if (!settled && timeoutMs !== undefined) {
      // Out of time: one more look, so a job that ended meanwhile gives its end and a timeout says where the job stands.
      const lastLook = async () => {
        const last = await lookAt(queue, jobId);
        settle(last === undefined || last.status === 'unfinished' ? { status: 'timeout', jobState: last?.jobState } : last);
      };
      timer = setTimeout(() => void lastLook(), timeoutMs);
    }
    return await ended;
  } finally {
    clearTimeout(timer);
    clearInterval(lookAgain);
    perJob.off(`completed:${jobId}`, onCompleted);
    perJob.off(`failed:${jobId}`, onFailed);
    signal?.removeEventListener('abort', onAbort);
    for (const event of PARKED_EVENTS) perJob.off(`${event}:${jobId}`, onParked);
  }
}

/** How often a waiting client looks at its job besides listening for its events. */
export const LOOK_AGAIN_EVERY_MS = 5_000;

/** The job events after which a job may have been parked for approval: its progress noted the calls, then it was delayed. */
const PARKED_EVENTS = ['progress', 'delayed'] as const;

/**
 * The calls the job awaits approval for when it is parked (delayed) for
 * them, with the results of the calls that ended before it parked;
 * `undefined` otherwise or when unreadable.
 */
async function parkedForApproval(
  queue: Queue,
  jobId: string,
): Promise<{ calls: AwaitingApprovalCall[]; answered: ToolResultBlock[] } | undefined> {
  try {
    const job = await Job.fromId(queue, jobId);
    const calls = awaitingApprovalOf(job?.progress);
    if (!job || calls.length === 0 || (await job.getState()) !== 'delayed') return undefined;
    return { calls, answered: answeredBeforeApprovalOf(job.progress) };
  } catch {
    return undefined;
  }
}

/**
 * The job's end if it has finished, else where it stands (`unknown`: it no
 * longer exists); `undefined` when Redis could not be read.
 */
async function lookAt(queue: Queue, jobId: string): Promise<Finished | { status: 'unfinished'; jobState: UnfinishedJobState } | undefined> {
  try {
    const state = await queue.getJobState(jobId);
    if (state !== 'completed' && state !== 'failed') return { status: 'unfinished', jobState: state };
    // Read after the state, so the job is read as finished.
    const job = await Job.fromId(queue, jobId);
    // Removed on finishing between the two reads: its event carries the end.
    if (!job) return { status: 'unfinished', jobState: 'unknown' };
    return state === 'completed'
      ? { status: 'completed', returnvalue: job.returnvalue }
      : { status: 'failed', failedReason: job.failedReason ?? '' };
  } catch {
    return undefined;
  }
}
