import { ToolReceiptsError } from '../core/errors.js';
import type { ToolResultBlock } from '../bullmq/job-data.js';
import type { TurnIdentity } from './job-id.js';

/** Where a turn's job is: enough to find it again. */
export interface TurnJobRef extends TurnIdentity {
  /** The BullMQ job id (see `turnJobId`). */
  readonly jobId: string;
}

/** The base of every error a submitted turn ends with; `code` tells which. */
export abstract class TurnError extends ToolReceiptsError {
  readonly jobId: string;
  readonly tenantId: string;
  readonly runId: string;
  readonly turnId: string;
  constructor(ref: TurnJobRef, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.jobId = ref.jobId;
    this.tenantId = ref.tenantId;
    this.runId = ref.runId;
    this.turnId = ref.turnId;
  }
}

/** Longest delay a Node timer honours; a longer one fires at once. */
export const MAX_WAIT_MS = 2 ** 31 - 1;

/** A wait limit that is not a whole number of milliseconds a timer can honour. */
export class InvalidWaitLimitError extends ToolReceiptsError {
  readonly code = 'turn.invalid_timeout';
  constructor(value: unknown) {
    super(`timeoutMs must be a whole number of milliseconds from 0 to ${MAX_WAIT_MS}, got ${String(value)}; leave it out to wait without a limit`);
  }
}

/** How to pick up a turn whose wait ended before its job did. */
export const resumeHint = (ref: TurnJobRef) =>
  `the job keeps running; to get its results, submit the same turn again (tenantId ${JSON.stringify(ref.tenantId)}, ` +
  `runId ${JSON.stringify(ref.runId)}, turnId ${JSON.stringify(ref.turnId)}, the same calls): it attaches to job ` +
  `${JSON.stringify(ref.jobId)} instead of enqueuing another`;

/**
 * The wait ran out before the job finished. The job is not cancelled: a later
 * `submit` of the same turn attaches to it (see {@link resumeHint}).
 */
export class TurnTimeoutError extends TurnError {
  readonly code = 'turn.timeout';
  constructor(ref: TurnJobRef, readonly timeoutMs: number) {
    super(ref, `turn ${ref.turnId} did not finish within ${timeoutMs} ms; ${resumeHint(ref)}`);
  }
}

/**
 * The caller's AbortSignal fired. When it fired while waiting (`enqueued`),
 * the job is not cancelled (see {@link resumeHint}); when it had fired before
 * the submit, nothing was enqueued.
 */
export class TurnAbortedError extends TurnError {
  readonly code = 'turn.aborted';
  constructor(ref: TurnJobRef, reason: unknown, readonly enqueued: boolean) {
    super(
      ref,
      enqueued
        ? `waiting for turn ${ref.turnId} was aborted; ${resumeHint(ref)}`
        : `turn ${ref.turnId} was not submitted: its AbortSignal had already fired`,
      { cause: reason },
    );
  }
}

/**
 * A call of the turn is ambiguous: its effect may or may not have happened,
 * and the worker refused to repeat it. `receiptKeys` name the receipts an
 * operator resolves (`tool-receipts show '<key>'`); `results` are the blocks
 * of the calls that completed before it, in call order (empty when the worker
 * did not log them).
 */
export class AmbiguousTurnError extends TurnError {
  readonly code = 'turn.ambiguous';
  constructor(
    ref: TurnJobRef,
    readonly receiptKeys: readonly string[],
    readonly results: readonly ToolResultBlock[],
    readonly ambiguousCallId: string | undefined,
    readonly failedReason: string,
  ) {
    super(
      ref,
      `turn ${ref.turnId} has an ambiguous call${ambiguousCallId ? ` (${ambiguousCallId})` : ''} that was not repeated; ` +
        `${results.length} call(s) before it completed. Receipt(s): ${receiptKeys.join(', ') || '(not named by the worker)'}`,
    );
  }
}

/** The worker refused the job's data as invalid; no call was claimed. */
export class TurnInvalidDataError extends TurnError {
  readonly code = 'turn.invalid_data';
  constructor(ref: TurnJobRef, readonly failedReason: string) {
    super(ref, `the worker refused turn ${ref.turnId}'s job data: ${failedReason}`);
  }
}

/** The job failed for good for another reason (a destructive failure, retries used up); `failedReason` is BullMQ's. */
export class TurnFailedError extends TurnError {
  readonly code = 'turn.failed';
  constructor(ref: TurnJobRef, readonly failedReason: string) {
    super(ref, `turn ${ref.turnId} failed: ${failedReason}`);
  }
}

/** The turn was submitted before with different job data; the existing job is left alone. */
export class TurnConflictError extends TurnError {
  readonly code = 'turn.conflict';
  constructor(ref: TurnJobRef) {
    super(
      ref,
      `turn ${ref.turnId} of run ${ref.runId} was already submitted with other calls (job ${ref.jobId}); ` +
        'a retried turn must resubmit the same calls, and a new turn needs a new turnId',
    );
  }
}
