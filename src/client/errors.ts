/**
 * The errors the client throws, each naming the turn's job so it can be found
 * again.
 */
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
    super(
      `timeoutMs must be a whole number of milliseconds from 0 to ${MAX_WAIT_MS}, got ${String(value)}; leave it out to wait without a limit`,
    );
  }
}

/** The turn as `submit` takes it again, for error sentences. */
const sameTurn = (ref: TurnJobRef) =>
  `submit the same turn again (tenantId ${JSON.stringify(ref.tenantId)}, runId ${JSON.stringify(ref.runId)}, ` +
  `turnId ${JSON.stringify(ref.turnId)}, the same calls)`;

/** How to pick up a turn whose wait ended before its job did. */
export const resumeHint = (ref: TurnJobRef) =>
  `only the wait ended, the job is left as it is; to get its results, ${sameTurn(ref)}: it attaches to job ` +
  `${JSON.stringify(ref.jobId)} while that job exists, instead of enqueuing another`;

/**
 * Where a job stood when a wait for it ran out: a BullMQ job state other than
 * finished, or `unknown` when the job no longer existed (removed, by hand or
 * by `removeOnComplete` / `removeOnFail`, before its end was heard).
 */
export type UnfinishedJobState = 'waiting' | 'active' | 'delayed' | 'prioritized' | 'waiting-children' | 'unknown';

/**
 * The wait ran out before the job finished; `timeoutMs` counts the waiting
 * only (from the moment the job was in the queue and the `QueueEvents`
 * listening). The job is not cancelled: a later `submit` of the same turn
 * attaches to it (see {@link resumeHint}). `jobState` says where it stood
 * (`undefined` if Redis could not tell). `unknown`: the job no longer
 * existed, and a later `submit` enqueues it anew; a wait also ends so,
 * before its limit or with none, once the job is seen missing on two looks
 * in a row (`timeoutMs` is then the limit, or without one the time waited).
 */
export class TurnTimeoutError extends TurnError {
  readonly code = 'turn.timeout';
  constructor(
    ref: TurnJobRef,
    readonly timeoutMs: number,
    readonly jobState: UnfinishedJobState | undefined,
  ) {
    super(
      ref,
      jobState === 'unknown'
        ? `turn ${ref.turnId} gave no end, and its job ${JSON.stringify(ref.jobId)} no longer exists: it was removed ` +
            `(by hand, by a clean or drain, or by removeOnComplete / removeOnFail before its end was heard). To get its results, ${sameTurn(ref)}: ` +
            'it is enqueued anew, and each call a kept receipt shows completed is replayed, not run again'
        : `turn ${ref.turnId} did not finish within ${timeoutMs} ms of waiting; ` +
            `${jobState === undefined ? "its job's state could not be read" : `its job is still ${jobState}`}; ${resumeHint(ref)}`,
    );
  }
}

/**
 * The caller's AbortSignal fired. When it fired while waiting (`enqueued`),
 * the job is not cancelled (see {@link resumeHint}); when it had fired before
 * the submit, nothing was enqueued.
 */
export class TurnAbortedError extends TurnError {
  readonly code = 'turn.aborted';
  constructor(
    ref: TurnJobRef,
    reason: unknown,
    readonly enqueued: boolean,
  ) {
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
 * of the calls that completed before it, in call order (empty, with
 * `resultsRead` false, when the job's log held none: the worker did not log
 * them, or `removeOnFail` removed the job with its log).
 */
export class AmbiguousTurnError extends TurnError {
  readonly code = 'turn.ambiguous';
  constructor(
    ref: TurnJobRef,
    readonly receiptKeys: readonly string[],
    readonly results: readonly ToolResultBlock[],
    readonly ambiguousCallId: string | undefined,
    readonly failedReason: string,
    readonly resultsRead: boolean = true,
  ) {
    super(
      ref,
      `turn ${ref.turnId} has an ambiguous call${ambiguousCallId ? ` (${ambiguousCallId})` : ''} that was not repeated; ` +
        (resultsRead
          ? `${results.length} call(s) before it completed`
          : "the results of the calls before it could not be read from the job's log") +
        `. Receipt(s): ${receiptKeys.join(', ') || '(not named by the worker)'}`,
    );
  }
}

/** The worker refused the job's data as invalid; no call was claimed. */
export class TurnInvalidDataError extends TurnError {
  readonly code = 'turn.invalid_data';
  constructor(
    ref: TurnJobRef,
    readonly failedReason: string,
  ) {
    super(ref, `the worker refused turn ${ref.turnId}'s job data: ${failedReason}`);
  }
}

/** The job failed for good for another reason (a destructive failure, retries used up); `failedReason` is BullMQ's. */
export class TurnFailedError extends TurnError {
  readonly code = 'turn.failed';
  constructor(
    ref: TurnJobRef,
    readonly failedReason: string,
  ) {
    super(ref, `turn ${ref.turnId} failed: ${failedReason}`);
  }
}

/** The turn was submitted before with different job data; the existing job is left alone. */
export class TurnConflictError extends TurnError {
  readonly code = 'turn.conflict';
  constructor(ref: TurnJobRef) {
    super(
      ref,
      `turn ${ref.turnId} of run ${ref.runId} was not submitted: its job ${ref.jobId} already holds other calls, and was left alone. ` +
        'A turnId names one turn: a new turn needs a turnId of its own, and a retried turn must resubmit the same calls',
    );
  }
}

/** What BullMQ names a queue's data by. */
export interface QueueIdentity {
  readonly name: string;
  /** The key prefix (`bull` when none was given). */
  readonly prefix: string;
  /** Name and prefix as the backend joins them (`<prefix>:<name>` on Redis). */
  readonly qualifiedName: string;
}

/**
 * `createToolCallClient` was given a `QueueEvents` of another queue or
 * prefix than its `Queue`: it would never hear the jobs end, and every
 * submit would wait until its limit (for ever without one).
 */
export class MismatchedQueueEventsError extends ToolReceiptsError {
  readonly code = 'client.mismatched_events';
  constructor(
    readonly queue: QueueIdentity,
    readonly queueEvents: QueueIdentity,
  ) {
    const sameNames = queue.name === queueEvents.name && queue.prefix === queueEvents.prefix;
    const describe = (q: QueueIdentity) =>
      `queue ${JSON.stringify(q.name)} under prefix ${JSON.stringify(q.prefix)}${sameNames ? ` (${JSON.stringify(q.qualifiedName)})` : ''}`;
    super(
      `the queueEvents listens to ${describe(queueEvents)}, but the queue is ${describe(queue)}; ` +
        "the client would never hear its jobs end. Make the QueueEvents with the queue's name and prefix",
    );
  }
}
