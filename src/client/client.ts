/**
 * The client side: submits a model's tool calls as a turn's job and waits for
 * its results.
 */
import { Job, type JobsOptions, type Queue, type QueueEvents } from 'bullmq';
import { deepEqual } from '../core/deep-equal.js';
import { checkOptions } from '../core/options.js';
import { TOOL_CALL_CLIENT_SCHEMA } from './options.js';
import { parseToolJobData, type ToolJobData, type ToolResultBlock } from '../bullmq/job-data.js';
import { parsePartialResultsLog } from '../bullmq/turn/partial-results.js';
import {
  AmbiguousTurnError,
  InvalidWaitLimitError,
  MAX_WAIT_MS,
  TurnAbortedError,
  TurnConflictError,
  TurnFailedError,
  TurnInvalidDataError,
  TurnTimeoutError,
  type TurnJobRef,
} from './errors.js';
import { turnJobId, type TurnIdentity } from './job-id.js';
import { assertSameQueue } from './queue-match.js';
import { type AddingHooks, waitForJobEnd } from './wait.js';
import { parkedTurnResults, type TurnResult } from './approval.js';

/** One call as the client submits it: the `id`/`name`/`input` of an Anthropic `tool_use` block. */
export interface ToolCallInput {
  readonly id: string;
  readonly name: string;
  readonly input: unknown;
}

/** One turn's tool calls, as {@link ToolCallClient.submit} takes them. */
export interface TurnSubmission extends TurnIdentity {
  readonly sessionId?: string;
  readonly calls: readonly ToolCallInput[];
  /** Run every call of this turn side by side (the job data's `parallel`); default: as the tools declare. */
  readonly parallel?: boolean;
  /**
   * Stop waiting after this long (the job is left as it is). Counts the
   * waiting only, from when the job is in the queue and the `QueueEvents`
   * ready: a turn that already finished gives its end even with 0. Default:
   * the client's `timeoutMs`, else no limit.
   */
  readonly timeoutMs?: number;
  /**
   * Stop waiting when this fires (the job is left as it is). Fired before
   * the job is added (before the submit, or while it gets ready to listen),
   * it adds nothing: `turn.aborted` with `enqueued: false`.
   */
  readonly signal?: AbortSignal;
  /**
   * When a call of the turn needs a person's approval: `'wait'` (default)
   * waits for the decision like any other wait (the results then say
   * executed, or denied); `'return'` resolves as soon as the job is parked
   * for it, with the awaiting calls as `awaiting_approval` results, the
   * calls that already ran with their results, and the others `pending`
   * (see `TurnResult`); submit the same turn again later for the real results.
   */
  readonly approvals?: 'wait' | 'return';
}

/** Options of {@link createToolCallClient}. */
export interface ToolCallClientOptions {
  /** The queue the `withToolReceipts` workers take jobs from. */
  readonly queue: Queue;
  /** A `QueueEvents` of the same queue (name and prefix, else `client.mismatched_events`); the client waits through it. */
  readonly queueEvents: QueueEvents;
  /** The BullMQ job name. Default `tool-calls`. */
  readonly jobName?: string;
  /** Options for every job (attempts, backoff, removal…); the job id is the client's. */
  readonly jobOptions?: Omit<JobsOptions, 'jobId' | 'repeat' | 'parent'>;
  /** Default wait limit of a submit, in ms. */
  readonly timeoutMs?: number;
}

/** The agent's side of the queue: submit a turn's calls and wait for their results. */
export interface ToolCallClient {
  /**
   * Enqueue the turn's calls as one job (or attach to the job of an earlier
   * submit of the same turn) and wait for it. Resolves with one tool_result
   * block per call, in call order. Rejects with a `TurnError`:
   * `turn.ambiguous`, `turn.invalid_data`, `turn.failed`, `turn.conflict`,
   * or, with the job left running, `turn.timeout` / `turn.aborted` (a
   * timeout's `jobState: 'unknown'`: the job was removed before its end was
   * heard, which also ends a wait without a limit). Bad input
   * is refused before anything is enqueued (`job.invalid_data`,
   * `turn.invalid_id`, `turn.invalid_timeout`).
   */
  submit(turn: TurnSubmission & { readonly approvals?: 'wait' }): Promise<ToolResultBlock[]>;
  /** With `approvals: 'return'`: as above, or, once the job is parked for approval, the calls awaiting it (see `TurnResult`). */
  submit(turn: TurnSubmission): Promise<TurnResult[]>;
  /** The job id a turn is enqueued under. */
  jobIdOf(turn: TurnIdentity): string;
  /**
   * The turn's job as it stands, without enqueuing or waiting: its calls and
   * BullMQ state; `undefined` when no job holds the turn (never submitted,
   * or removed since).
   */
  find(turn: TurnIdentity): Promise<FoundTurn | undefined>;
}

/** A turn's job as {@link ToolCallClient.find} read it. */
export interface FoundTurn {
  readonly jobId: string;
  /** The calls the job was submitted with. */
  readonly calls: readonly ToolCallInput[];
  /** BullMQ's state of the job (`waiting`, `active`, `delayed`, `completed`, `failed`…). */
  readonly state: string;
}

/**
 * Create the client that enqueues turns for `withToolReceipts` workers.
 *
 * The job id derives from (tenant, run, turn), so a retried agent step that
 * submits the same turn again waits for the job already there instead of
 * enqueuing a second one; its calls must be the same (else `turn.conflict`).
 * The worker's receipts keep each effect at most once even if a job is added
 * again after the first was removed.
 */
export function createToolCallClient(options: ToolCallClientOptions): ToolCallClient {
  checkOptions<ToolCallClientOptions>('createToolCallClient', options, TOOL_CALL_CLIENT_SCHEMA);
  const { queue, queueEvents } = options;
  assertSameQueue(queue, queueEvents);
  const jobName = options.jobName ?? 'tool-calls';

  const submit = async (turn: TurnSubmission): Promise<TurnResult[]> => {
    const ref: TurnJobRef = { jobId: turnJobId(turn), tenantId: turn.tenantId, runId: turn.runId, turnId: turn.turnId };
    const timeoutMs = waitLimit(turn.timeoutMs ?? options.timeoutMs);
    const data = parseToolJobData({
      tenantId: turn.tenantId,
      runId: turn.runId,
      sessionId: turn.sessionId,
      calls: turn.calls,
      ...(turn.parallel === undefined ? {} : { parallel: turn.parallel }),
    });
    if (turn.signal?.aborted) throw new TurnAbortedError(ref, turn.signal.reason, false);
    const wait = { timeoutMs, signal: turn.signal, untilApproval: turn.approvals === 'return' };
    const end = await waitForJobEnd(queue, queueEvents, ref.jobId, wait, (adding) =>
      enqueueOrAttach(queue, jobName, data, { ...options.jobOptions, jobId: ref.jobId }, ref, adding),
    );
    switch (end.status) {
      case 'completed':
        return resultsOf(end.returnvalue, data, ref);
      case 'failed':
        throw await failureOf(queue, ref, end.failedReason);
      case 'timeout':
        throw new TurnTimeoutError(ref, timeoutMs ?? 0, end.jobState);
      case 'gone':
        throw new TurnTimeoutError(ref, timeoutMs ?? end.waitedMs, 'unknown');
      case 'aborted':
        throw new TurnAbortedError(ref, end.reason, end.enqueued);
      case 'awaiting_approval':
        return parkedTurnResults(data, end.calls, end.answered);
    }
  };

  const find = async (turn: TurnIdentity): Promise<FoundTurn | undefined> => {
    const jobId = turnJobId(turn);
    const job = await Job.fromId(queue, jobId);
    if (!job) return undefined;
    const calls = (job.data as { calls?: unknown } | undefined)?.calls;
    return { jobId, calls: Array.isArray(calls) ? (calls as ToolCallInput[]) : [], state: await job.getState() };
  };

  return { submit: submit as ToolCallClient['submit'], jobIdOf: turnJobId, find };
}

/** A wait limit a timer can honour (Node fires a longer or fractional one early), or none. */
function waitLimit(timeoutMs: number | undefined): number | undefined {
  if (timeoutMs === undefined) return undefined;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > MAX_WAIT_MS) throw new InvalidWaitLimitError(timeoutMs);
  return timeoutMs;
}

/** How often in a row the client adds a turn's job and finds it gone before reading it back, before it gives up. */
const MAX_ADDS_UNREAD = 10;

/** How long a submit that found its job gone at the read-back waits to hear that job's end before adding it again. */
const GONE_JOB_END_WITHIN_MS = 1_000;

/**
 * Add the job; BullMQ keeps an existing job with the same id, so read it back
 * to check it carries the same calls. A job gone by then finished and was
 * removed in that moment (a quick tool and `removeOnComplete`, usually): its
 * end, once heard, is taken as this turn's only when it is a completion whose
 * results answer these very calls. Any other (a failure, a completion of
 * other calls, none heard within {@link GONE_JOB_END_WITHIN_MS}) may have
 * been another submit's, so the job is added again, after forgetting the
 * ends heard so far; the receipts replay the calls of a job that was this
 * turn's.
 */
async function enqueueOrAttach(
  queue: Queue,
  jobName: string,
  data: ToolJobData,
  opts: JobsOptions,
  ref: TurnJobRef,
  adding: AddingHooks,
): Promise<void> {
  // As the job's data is stored and read back: through JSON.
  const submitted: unknown = JSON.parse(JSON.stringify(data));
  for (let adds = 0; adds < MAX_ADDS_UNREAD; adds++) {
    adding.forgetEndsHeard();
    await queue.add(jobName, data, opts);
    const job = await Job.fromId(queue, ref.jobId);
    if (job) {
      // Without a depth bound (both went through JSON: no cycles), so a model's deeply nested arguments, which the
      // worker answers as a rejected call, compare too.
      if (!deepEqual(job.data, submitted, Infinity)) throw new TurnConflictError(ref);
      return;
    }
    const heard = await adding.endHeard(GONE_JOB_END_WITHIN_MS);
    if (heard?.status === 'completed' && answersEachCall(heard.returnvalue, data)) return;
  }
  throw new TurnFailedError(
    ref,
    `client: the turn's job finished and was removed before its calls could be read back, ${MAX_ADDS_UNREAD} times in a row; submit the turn again`,
  );
}

/** The job's results, one per call in call order, each answering its call (a job of other calls under this id is a conflict). */
function resultsOf(returnvalue: unknown, data: ToolJobData, ref: TurnJobRef): ToolResultBlock[] {
  const results = (returnvalue as { results?: unknown } | null)?.results;
  if (!Array.isArray(results) || results.length !== data.calls.length) {
    throw new TurnFailedError(ref, `the job completed without one result per call (is the worker wrapped with withToolReceipts?)`);
  }
  if (!answersEachCall(returnvalue, data)) throw new TurnConflictError(ref);
  return results as ToolResultBlock[];
}

/** Whether a job's return value holds one result per call of `data`, each answering its call (its `tool_use_id`). */
function answersEachCall(returnvalue: unknown, data: ToolJobData): boolean {
  const results = (returnvalue as { results?: unknown } | null)?.results;
  if (!Array.isArray(results) || results.length !== data.calls.length) return false;
  return results.every((result: unknown, i) => (result as { tool_use_id?: unknown } | null)?.tool_use_id === data.calls[i]!.id);
}

/**
 * The receipt's Redis key (`<prefix>:rcpt:{<tenant>|<run>}:<tool>:<hash>`; no
 * part holds whitespace) that ends the worker's failedReason (`... Receipt:
 * <key>`). Anchored at the end: the call id and the tool's reason come
 * earlier and are the model's or the tool's text, which may look like a key.
 */
const RECEIPT_ENDING_REASON = /\. Receipt: (\S+:rcpt:\{[^\s}]+\}:\S+:\S+)$/;

async function failureOf(queue: Queue, ref: TurnJobRef, failedReason: string): Promise<Error> {
  if (failedReason.startsWith('receipt.ambiguous:')) {
    const { logs } = await queue.getJobLogs(ref.jobId);
    const partial = logs.map(parsePartialResultsLog).find((p) => p !== undefined);
    const named = partial?.ambiguous.receiptKey ?? RECEIPT_ENDING_REASON.exec(failedReason)?.[1];
    const resultsRead = partial !== undefined;
    return new AmbiguousTurnError(
      ref,
      named ? [named] : [],
      partial?.results ?? [],
      partial?.ambiguous.tool_use_id,
      failedReason,
      resultsRead,
    );
  }
  if (failedReason.startsWith('job.invalid_data:')) return new TurnInvalidDataError(ref, failedReason);
  return new TurnFailedError(ref, failedReason);
}
