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
export type Finished =
  { readonly status: 'completed'; readonly returnvalue: unknown } | { readonly status: 'failed'; readonly failedReason: string };

/** How a job ended, or why the wait for it stopped first (`jobState`: where the job stood then, if it could be read). */
export type JobEnd =
  | Finished
  | { readonly status: 'timeout'; readonly jobState: UnfinishedJobState | undefined }
  /** The job was seen missing on two looks in a row before its end was heard; `waitedMs`: how long the wait had lasted. */
  | { readonly status: 'gone'; readonly waitedMs: number }
  /** `enqueued`: `whileListening` had started (a signal that fired before it leaves the job unadded). */
  | { readonly status: 'aborted'; readonly reason: unknown; readonly enqueued: boolean }
  /** With `untilApproval`: the job is parked until a person decides on these calls; `answered` ran before it was. */
  | {
      readonly status: 'awaiting_approval';
      readonly calls: readonly AwaitingApprovalCall[];
      readonly answered: readonly ToolResultBlock[];
    };

/** What `whileListening` is handed while it adds the job: the ends heard under its id since it began, or since it forgot them. */
export interface AddingHooks {
  /** Forgets the ends heard so far (before each add: an end heard earlier may be another job's under the same id). */
  forgetEndsHeard(): void;
  /** The first end heard since the last forget, waiting up to `withinMs` for one; `undefined` when none came. */
  endHeard(withinMs: number): Promise<Finished | undefined>;
}

/**
 * Wait for a job to finish through BullMQ's `QueueEvents`, as
 * `job.waitUntilFinished` does (listen first, then look at the job's state,
 * so a job that finished in between is not missed), but also stop on a
 * timeout or an AbortSignal, removing every listener either way. Stopping
 * the wait never touches the job. `whileListening` runs once the listeners
 * are in place and the `QueueEvents` is ready (the client enqueues there, so
 * even a job that finishes and is removed at once is seen); what it throws
 * is thrown. A signal that fires before it starts ends the wait without
 * running it. An end heard before it returns counts only once it has
 * returned, and only if it was heard after its last call of
 * `forgetEndsHeard` (the client calls that before each add, since an end
 * heard earlier may be another job's under the same id).
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
 * timeout, or a wait with none that never ends. A job missing on two looks
 * in a row ends the wait as `gone`: BullMQ publishes a job's end in the same
 * script that removes it on finishing, so an end still unheard by the
 * second look is not coming (the job was removed by hand, cleaned or
 * drained, or its event was lost).
 */
export async function waitForJobEnd(
  queue: Queue,
  queueEvents: QueueEvents,
  jobId: string,
  options: { timeoutMs?: number; signal?: AbortSignal; untilApproval?: boolean } = {},
  whileListening: (adding: AddingHooks) => Promise<void> = async () => undefined,
): Promise<JobEnd> {
  const { timeoutMs, signal } = options;
  if (signal?.aborted) return { status: 'aborted', reason: signal.reason, enqueued: false };
  let settled = false;
  let resolve!: (end: JobEnd) => void;
  const ended = new Promise<JobEnd>((r) => (resolve = r));
  const settle = (end: JobEnd) => {
    settled = true;
    resolve(end);
  };
  let adding = false;
  let added = false;
  // An end heard while adding waits until the add is done (and may be forgotten by a later add).
  let heardWhileAdding: Finished | undefined;
  let onHeard: (() => void) | undefined;
  const onEnd = (end: Finished) => {
    if (added) return settle(end);
    heardWhileAdding ??= end;
    onHeard?.();
  };
  const hooks: AddingHooks = {
    forgetEndsHeard: () => void (heardWhileAdding = undefined),
    endHeard: (withinMs) =>
      heardWhileAdding !== undefined
        ? Promise.resolve(heardWhileAdding)
        : new Promise((resolve) => {
            const answer = () => {
              clearTimeout(timeout);
              onHeard = undefined;
              resolve(heardWhileAdding);
            };
            const timeout = setTimeout(answer, withinMs);
            onHeard = answer;
          }),
  };
  const onCompleted = (args: { returnvalue: unknown }) => onEnd({ status: 'completed', returnvalue: args.returnvalue });
  const onFailed = (args: { failedReason: string }) => onEnd({ status: 'failed', failedReason: args.failedReason ?? '' });
  const onAbort = () => settle({ status: 'aborted', reason: signal?.reason, enqueued: adding });
  const onParked = () => {
    // Before the add, a parked job under this id is not yet known to hold this turn's calls.
    if (!added) return;
    void parkedForApproval(queue, jobId).then((parked) => {
      if (parked !== undefined && !settled) settle({ status: 'awaiting_approval', ...parked });
    });
  };
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
    // Aborted while getting ready: nothing was added, and nothing will be.
    if (settled) return await ended;
    adding = true;
    await whileListening(hooks);
    added = true;
    if (heardWhileAdding !== undefined) settle(heardWhileAdding);
    const waitStarted = Date.now();
    let missingLooks = 0;
    const judge = (look: Awaited<ReturnType<typeof lookAt>>) => {
      if (settled) return;
      missingLooks = look?.status === 'unfinished' && look.jobState === 'unknown' ? missingLooks + 1 : 0;
      if (look === undefined) return;
      if (look.status !== 'unfinished') settle(look);
      else if (missingLooks >= 2) settle({ status: 'gone', waitedMs: Date.now() - waitStarted });
      else if (options.untilApproval && look.jobState === 'delayed') onParked();
    };
    if (!settled) judge(await lookAt(queue, jobId));
    // Parked before the listeners heard it, perhaps (a second look at a delayed job is harmless).
    if (!settled && options.untilApproval) onParked();
    if (!settled) {
      lookAgain = setInterval(() => void lookAt(queue, jobId).then(judge), LOOK_AGAIN_EVERY_MS);
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
