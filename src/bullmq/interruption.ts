/**
 * What a job ends with when its lock was lost or it was cancelled while calls
 * ran.
 */
import { DelayedError, UnrecoverableError } from 'bullmq';
import type { ToolReceiptsError } from '../core/errors.js';
import { JobCancelledError, JobLockLostError, unrecoverable } from './errors.js';

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

/**
 * How an interrupted job ends, whatever its turn came to (`outcome`: the
 * error it threw, or none when it finished). The interruption replaces any
 * error that would have retried the job (such as the failure of a tool that
 * stopped because of the abort), so a cancelled job never runs again
 * whatever `attempts` says; a cancelled job whose last call finished anyway
 * ends cancelled too. An error that already stops the job
 * (`UnrecoverableError`: an ambiguous call, a destructive failure) says more
 * and is kept, and so is a `DelayedError`, thrown once the job was already
 * parked; a job that lost its lock but finished every call returns its
 * results (every receipt is settled; if the lock is really gone, BullMQ
 * refuses the completion and a redelivery replays them). Returns
 * `undefined` when the job was not interrupted, or `outcome` stands.
 */
export function interruptedEnding(jobId: string, signal: AbortState, outcome: { readonly error?: unknown }): Error | undefined {
  const interruption = interruptionOf(jobId, signal);
  if (interruption === undefined || outcome.error === interruption) return undefined;
  if (!('error' in outcome) && interruption instanceof JobLockLostError) return undefined;
  if (outcome.error instanceof UnrecoverableError || outcome.error instanceof DelayedError) return undefined;
  return interruption;
}
