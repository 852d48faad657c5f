import type { EventEmitter } from 'node:events';
import { Job, type Queue, type QueueEvents } from 'bullmq';

/** How a job ended, or why the wait for it stopped first. */
export type JobEnd =
  | { readonly status: 'completed'; readonly returnvalue: unknown }
  | { readonly status: 'failed'; readonly failedReason: string }
  | { readonly status: 'timeout' }
  | { readonly status: 'aborted'; readonly reason: unknown };

/**
 * Wait for a job to finish through BullMQ's `QueueEvents`, as
 * `job.waitUntilFinished` does (listen first, then look at the job's state,
 * so a job that finished in between is not missed), but also stop on a
 * timeout or an AbortSignal, removing every listener either way. Stopping
 * the wait never touches the job. `whileListening` runs once the listeners
 * are in place (the client enqueues there, so even a job that finishes and
 * is removed at once is seen); what it throws is thrown.
 */
export async function waitForJobEnd(
  queue: Queue,
  queueEvents: QueueEvents,
  jobId: string,
  options: { timeoutMs?: number; signal?: AbortSignal } = {},
  whileListening: () => Promise<void> = async () => undefined,
): Promise<JobEnd> {
  const { timeoutMs, signal } = options;
  if (signal?.aborted) return { status: 'aborted', reason: signal.reason };
  let settle!: (end: JobEnd) => void;
  const ended = new Promise<JobEnd>((resolve) => (settle = resolve));
  const onCompleted = (args: { returnvalue: unknown }) => settle({ status: 'completed', returnvalue: args.returnvalue });
  const onFailed = (args: { failedReason: string }) => settle({ status: 'failed', failedReason: args.failedReason ?? '' });
  const onAbort = () => settle({ status: 'aborted', reason: signal?.reason });
  const timer = timeoutMs === undefined ? undefined : setTimeout(() => settle({ status: 'timeout' }), timeoutMs);
  // BullMQ emits per-job events (`completed:<id>`) that its listener types do not list.
  const perJob = queueEvents as unknown as EventEmitter;
  perJob.on(`completed:${jobId}`, onCompleted);
  perJob.on(`failed:${jobId}`, onFailed);
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    await queueEvents.waitUntilReady();
    await whileListening();
    void settledAlready(queue, jobId).then((end) => end && settle(end), () => undefined);
    return await ended;
  } finally {
    clearTimeout(timer);
    perJob.off(`completed:${jobId}`, onCompleted);
    perJob.off(`failed:${jobId}`, onFailed);
    signal?.removeEventListener('abort', onAbort);
  }
}

async function settledAlready(queue: Queue, jobId: string): Promise<JobEnd | undefined> {
  const state = await queue.getJobState(jobId);
  if (state !== 'completed' && state !== 'failed') return undefined;
  // Read after the state, so the job is read as finished.
  const job = await Job.fromId(queue, jobId);
  if (!job) return undefined; // removed on finishing: its event carries the end
  return state === 'completed'
    ? { status: 'completed', returnvalue: job.returnvalue }
    : { status: 'failed', failedReason: job.failedReason ?? '' };
}
