import type { ToolReceiptsError } from '../core/errors.js';
import { JobCancelledError, JobLockLostError, unrecoverable } from './errors.js';

/**
 * Stop a job whose lock was lost or that was cancelled before it claims
 * another call: a later call claimed now would start its effect with an
 * already-aborted signal, on a job that may be running elsewhere.
 *
 * A lost lock throws {@link JobLockLostError} (retryable: the job may still
 * be delivered again, and its next delivery claims afresh); a cancellation
 * throws BullMQ's `UnrecoverableError` around {@link JobCancelledError}.
 */
export function throwIfInterrupted(jobId: string, signal: Pick<AbortSignal, 'aborted' | 'reason'>): void {
  if (!signal.aborted) return;
  const reason: unknown = signal.reason;
  if (reason instanceof JobLockLostError) throw reason;
  throw unrecoverable(new JobCancelledError(jobId, reason) satisfies ToolReceiptsError);
}
