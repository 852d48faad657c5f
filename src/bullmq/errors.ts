/**
 * The errors the wrapper throws into BullMQ (ambiguous, lost lock, failed
 * call) and how an error becomes unrecoverable.
 */
import { UnrecoverableError } from 'bullmq';
import { carryToolReceiptsError, ToolReceiptsError } from '../core/errors.js';
import type { ToolReceiptsErrorCode } from '../core/error-codes.js';
import { InvalidOptionsError } from '../core/options.js';
import type { FailureTier } from '../core/tiers.js';
import type { ToolResultBlock } from '../core/job-data.js';

/**
 * A call's effect may or may not have happened and nothing can tell which.
 * The wrapper refuses to run it again; an operator resolves the receipt.
 */
export class AmbiguousToolCallError extends ToolReceiptsError {
  readonly code = 'receipt.ambiguous';
  /**
   * The results of the job's calls that ended before this one, in call
   * order, so a host can still append them to the conversation. Filled in by
   * the processor before the job fails; the same data is in the job's log
   * (see `formatPartialResultsLog`).
   */
  results: readonly ToolResultBlock[] = [];
  constructor(
    readonly receiptKey: string,
    readonly tool: string,
    readonly callId: string,
    readonly reason: string,
  ) {
    super(`tool call ${callId} (${tool}) is ambiguous and was not repeated: ${reason}. Receipt: ${receiptKey}`);
  }
}

/**
 * BullMQ could not renew the lock of the job a call belongs to: the job may
 * already be running on another worker. The call's `ctx.signal` is aborted
 * with this error as its reason, none of the job's later calls is claimed,
 * and the job ends with this error (retryable: a later delivery claims
 * afresh, and the receipts keep every effect at most once), whatever the
 * tool threw when it stopped.
 */
export class JobLockLostError extends ToolReceiptsError {
  readonly code = 'job.lock_lost';
  constructor(readonly jobId: string) {
    super(`the BullMQ lock of job ${jobId} could not be renewed; it may be running elsewhere`);
  }
}

/**
 * The job was cancelled (BullMQ's abort signal fired, e.g. `worker.cancelJob`).
 * No call of the job is claimed after that; once the call in flight has
 * ended (its receipt settled as the tool reports), the job fails with this
 * error, unrecoverably, whatever the tool threw and whatever `attempts` says.
 */
export class JobCancelledError extends ToolReceiptsError {
  readonly code = 'job.cancelled';
  constructor(
    readonly jobId: string,
    readonly reason: unknown,
  ) {
    super(
      `job ${jobId} was cancelled (${reason instanceof Error ? reason.message : String(reason)}); its remaining tool calls were not run`,
    );
  }
}

/**
 * A tool threw. Carries the failure tier so BullMQ retry policy and the
 * model-facing message agree.
 */
export class ToolCallFailedError extends ToolReceiptsError {
  readonly code = 'tool.failed';
  constructor(
    readonly tool: string,
    readonly callId: string,
    readonly tier: FailureTier,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * `withToolReceipts` was given an option it cannot use. The same class as
 * every refused option ({@link InvalidOptionsError}, code `options.invalid`);
 * this name is kept so existing `instanceof` checks still hold.
 */
export const InvalidToolReceiptsOptionsError = InvalidOptionsError;
/** See the constant of the same name. */
export type InvalidToolReceiptsOptionsError = InvalidOptionsError;

/**
 * BullMQ's UnrecoverableError standing for our typed error: its `code`, the
 * error as `cause`, and the code at the front of the message (BullMQ keeps
 * only the message as the job's `failedReason`). It is what a Worker's
 * `failed` listeners get, and `instanceof ToolReceiptsError` holds for it.
 */
export function unrecoverable(cause: ToolReceiptsError): UnrecoverableError & { readonly code: ToolReceiptsErrorCode } {
  return carryToolReceiptsError(new UnrecoverableError(`${cause.code}: ${cause.message}`), cause);
}
