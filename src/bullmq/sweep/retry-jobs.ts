/**
 * Finishing a turn after its ambiguous call was settled: the BullMQ jobs
 * recorded on the receipt (one per attempt) that failed are retried, so each
 * replays the settled call and runs the rest of its calls.
 */
import { Job, Queue } from 'bullmq';
import { ToolReceiptsError } from '../../core/errors.js';
import type { RedisConnection } from '../../redis/connection/connection.js';
import type { AttemptJob, ReceiptRecord } from '../../redis/receipts/reads/record.js';

/** A job retry was asked for a call that is not settled yet: retrying would only meet the same ambiguity. */
export class CallNotSettledError extends ToolReceiptsError {
  readonly code = 'receipt.not_settled';
  constructor(readonly redisKey: string) {
    super(
      `${redisKey} is still running (ambiguous or in progress), so its jobs were not retried: settle it first ` +
        '(tool-receipts resolve, or a reconcile), then retry',
    );
  }
}

/** What {@link retryFailedJobs} did with each job recorded on the receipt. */
export interface JobRetryReport {
  readonly job: AttemptJob;
  /** `retried`: it was failed and is now waiting again. Otherwise the state it was found in, left alone. */
  readonly action: 'retried' | 'missing' | string;
}

/**
 * Retries, once the receipt is settled (completed or failed), every BullMQ job
 * recorded on it (each attempt's, and each that met the call while it was
 * ambiguous) that is in the failed state, resetting its attempt counters
 * so it gets its full retry budget again. Jobs in any other state (completed,
 * active, waiting, removed) are reported and left alone. `connection` is a
 * client for the queues' Redis (it is shared, not closed). Throws
 * {@link CallNotSettledError} for a receipt still running.
 */
export async function retryFailedJobs(connection: RedisConnection, record: ReceiptRecord): Promise<JobRetryReport[]> {
  if (record.status === 'running') throw new CallNotSettledError(record.redisKey);
  const seen = new Set<string>();
  const reports: JobRetryReport[] = [];
  for (const { queue: name, prefix, id: jobId } of [...record.jobs, ...record.metJobs]) {
    const job: AttemptJob = { queue: name, prefix, id: jobId };
    const id = JSON.stringify([job.prefix, job.queue, job.id]);
    if (seen.has(id)) continue;
    seen.add(id);
    const queue = new Queue(job.queue, { connection, prefix: job.prefix });
    try {
      const found = await Job.fromId(queue, job.id);
      const state = found ? await found.getState() : 'missing';
      if (found && state === 'failed') {
        reports.push({ job, action: await retried(found) });
      } else {
        reports.push({ job, action: state });
      }
    } finally {
      await queue.close();
    }
  }
  return reports;
}

/**
 * Retries a failed job: `retried`, or, when another retry moved it on first
 * (a second console, a double click, the CLI beside the console), the state
 * it is in now, left alone. BullMQ refuses a retry of a job no longer failed.
 */
async function retried(job: Job): Promise<string> {
  try {
    await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
    return 'retried';
  } catch (error) {
    const now = await job.getState();
    if (now === 'failed') throw error;
    return now;
  }
}
