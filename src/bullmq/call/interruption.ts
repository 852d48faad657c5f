/**
 * A job whose BullMQ lock was lost or that was cancelled: what it ends with,
 * and the check before each call claims, so nothing more starts on a job
 * that may be running elsewhere.
 */
import type { ToolReceiptsError } from '../../core/errors.js';
import { JobCancelledError, JobLockLostError, unrecoverable } from '../errors.js';

type AbortState = Pick<AbortSignal, 'aborted' | 'reason'>;

/**
 * What a job whose lock was lost or that was cancelled ends with, or
 * `undefined` when neither happened: {@link JobLockLostError} for a lost lock
 * (retryable: the job may still be delivered again, and its next delivery
 * claims afresh), else BullMQ's `UnrecoverableError` around
 * {@link JobCancelledError}, so no attempt the job has left runs it again.
 */
export function interruptionOf(jobId: string, signal: AbortState): Error | undefined {
  if (!signal.aborted) return undefined;
  const reason: unknown = signal.reason;
  if (reason instanceof JobLockLostError) return reason;
  return unrecoverable(new JobCancelledError(jobId, reason) satisfies ToolReceiptsError);
}

/**
 * Stop a job whose lock was lost or that was cancelled before it claims
 * another call: a later call claimed now would start its effect with an
 * already-aborted signal, on a job that may be running elsewhere. Throws
 * what {@link interruptionOf} gives.
 */
export function throwIfInterrupted(jobId: string, signal: AbortState): void {
  const interruption = interruptionOf(jobId, signal);
  if (interruption) throw interruption;
}
