/**
 * How a call's claim and attempt end on its receipt: the claim (an expired
 * attempt settled on the way, in settle-expired.ts, only when one is found),
 * the result shaped, the complete (which may carry the next call's claim),
 * the failure settle and what it tells the job, and what an attempt that was
 * fenced out, aborted or interrupted ends with.
 */
import type { ToolCallReceiptKey } from '../core/identity.js';
import { stringifyToolResult, ToolErrorResult, unwrapToolResultForLlm } from '../core/result-text.js';
import { failureFactsOf, failureTier, isUnreachableService, REJECTION_REMOVAL_SUFFIX, ToolRefusedError } from '../core/tiers.js';
import type { ToolReceiptsError } from '../core/errors.js';
import { FencedOutError, type AttemptFence } from '../redis/errors.js';
import type { PrefetchedClaim, SettleResult } from '../redis/receipts/store.js';
import { DEFAULT_TOOL_RESULT_CHARS } from '../offload/shaping.js';
import type { LimitedCall } from '../limits/call-limits.js';
import type { CallRuntime, JobScope, RecordedToolResult } from './call-runtime.js';
import type { AnyToolDefinition } from './define-tool.js';
import { JobCancelledError, JobLockLostError, ToolCallFailedError, unrecoverable } from './errors.js';
import type { FencedOutEvent } from './events.js';
import { asSentence, errorText, failureContent, retriesJob } from './failure-policy.js';
import { toolResultBlock as block, type ToolCall, type ToolJobData, type ToolResultBlock } from '../core/job-data.js';
import type { CallFacts } from './observer.js';
import { attemptJobOf, claimOptionsOf, type NextCall } from './prepare-call.js';
import { resultShaper, type ResultShapingOptions } from './result-shaping.js';
import { settleExpired, type CallClaim, type SettleScope } from './settle-expired.js';

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

/** Whether a tool settles its own expired attempts. */
export const settlesExpired = (tool: AnyToolDefinition): boolean =>
  tool.effect === 'keyed' || tool.effect === 'transactional' || tool.reconcile !== undefined;

/**
 * Claim the call (`ahead` answers the claim when the call before carried it).
 * When the claim finds an expired opaque attempt and the tool can settle it,
 * settle-expired.ts tries to; tools that cannot get the store's claim
 * unchanged. A job that meets the call ambiguous is noted on the receipt, so
 * it can be retried once the call is settled.
 */
export async function claimCall(x: SettleScope, ahead?: PrefetchedClaim): Promise<CallClaim> {
  const { scope, tool, key } = x;
  const settles = settlesExpired(tool);
  const options = claimOptionsOf(scope.job, tool, settles);
  let claim: CallClaim = await x.rt.keyspace.receipts.claim(key, options, ahead);
  if (settles && claim.decision.kind === 'ambiguous' && claim.lostFence) claim = await settleExpired(x, claim, options);
  const job = attemptJobOf(scope.job);
  if (claim.decision.kind === 'ambiguous' && job) {
    await x.rt.keyspace.reconciles.noteJob(key, job).catch((error: unknown) => x.facts.jobNotNoted(error));
  }
  return claim;
}

/** Turns a tool's return value into what the model sees and the receipt stores. */
export type ResultShaper = (value: unknown, call: ToolCall, tool: AnyToolDefinition, data: ToolJobData) => Promise<RecordedToolResult>;

/**
 * The processor's result shaper. Without a result store, a result whose text
 * fits the cap is that text, made here; only a result over the cap, an
 * error result or a worker with a store enters the capper (src/offload),
 * which gives the same text for a result within its limits.
 */
export function resultShaperOf(options: ResultShapingOptions): ResultShaper {
  const shape = resultShaper(options);
  if (options.resultStore) return shape;
  const given = options.maxResultChars ?? DEFAULT_TOOL_RESULT_CHARS;
  const cap = Number.isFinite(given) && given > 0 ? Math.floor(given) : Number.POSITIVE_INFINITY;
  return (value, call, tool, data) => {
    if (!(value instanceof ToolErrorResult)) {
      const text = stringifyToolResult(unwrapToolResultForLlm(value));
      if (text.length <= cap) return Promise.resolve({ content: text });
    }
    return shape(value, call, tool, data);
  };
}

/** One execution's fixed facts, passed along instead of a long parameter list. */
export interface Execution {
  readonly rt: CallRuntime;
  readonly scope: JobScope;
  readonly call: ToolCall;
  readonly tool: AnyToolDefinition;
  readonly key: ToolCallReceiptKey;
  readonly args: unknown;
  /** The attempt's fence, carried by every write; `attempt` is its number, for logs and events. */
  readonly fence: AttemptFence;
  readonly attempt: number;
  /** Where the call's facts go: its log lines, its events and the user's telemetry. */
  readonly facts: CallFacts;
  /** This attempt followed another whose tool reported an unknown outcome in this delivery. */
  readonly afterUnknownOutcome: boolean;
  /** The call after this one, which the complete may claim in the same script. */
  readonly next: NextCall | undefined;
  /** The call's shares of its limits, bound to this attempt; given back when it is settled as never started. */
  readonly limited?: LimitedCall;
}

/**
 * Completes the receipt; when the next call of the turn may be claimed
 * ahead, the same script claims it and its answer is kept for that call.
 */
export async function settleCompleted(x: Execution, result: RecordedToolResult): Promise<SettleResult> {
  const { rt, key, fence, next } = x;
  const carried = await next?.claimToCarry();
  if (next === undefined || carried === undefined)
    return x.facts.roundTrip('complete', () => rt.keyspace.receipts.complete(key, fence, result));
  const { settled, ahead } = await x.facts.roundTrip('completeAndClaim', () =>
    rt.keyspace.receipts.completeAndClaim(key, fence, result, carried),
  );
  next.carried(ahead);
  return settled;
}

/**
 * A settle that came after a claim had already reported the attempt
 * ambiguous: the store recorded it on the receipt; tell the operator too.
 */
export function reportLateSettle(x: Execution, settled: SettleResult, outcome: 'executed' | 'failed'): void {
  if (!settled.late) return;
  x.facts.lateSettle(outcome, x.attempt, { ambiguousMs: settled.late.ambiguousMs, settledMs: settled.settledMs });
}

/**
 * The error a fenced-out attempt leaves the job with. It is retryable: the
 * job's next delivery claims again and finds the attempt that took over
 * (wait) or its result (replay).
 */
export function fencedOutFailure(x: Execution, during: FencedOutEvent['during'], cause?: unknown): Error {
  return new ToolCallFailedError(
    x.tool.name,
    x.call.id,
    'neutral',
    `attempt ${x.attempt} of tool call ${x.call.id} was fenced out during ${during}; another attempt owns it`,
    { cause },
  );
}

/**
 * Read the receipt once (no write, so a lease left to lapse is not renewed)
 * and report whether another attempt owns it now.
 */
export async function takeoverOf(x: Execution): Promise<FencedOutError | undefined> {
  const now = await x.rt.keyspace.receipts.inspect(x.key).catch(() => null);
  if (!now || (now.status === 'running' && now.attempts === x.fence.attempt && now.epoch === x.fence.epoch)) return undefined;
  return new FencedOutError(now.redisKey, x.fence, { status: now.status, attempts: now.attempts, epoch: now.epoch }, 'abort');
}

/**
 * A tool that failed after its job was cancelled or lost its BullMQ lock may
 * have been cut off mid-effect, so its failure proves nothing. The receipt is
 * left running and its lease lapses: a resumable call is then taken over, an
 * opaque one becomes ambiguous. (A tool that throws `NeverStartedError` is
 * settled as failed instead: see {@link settleInterrupted}.) Returns what the
 * job ends with: the interruption (see `interruptionOf`), never a failure of
 * the tool, so a cancelled job is not retried and the breaker counts nothing.
 */
export function abandoned(x: Execution, reason: unknown, cause: unknown): Error {
  x.facts.aborted(reason, x.attempt, cause);
  return interruptionOf(x.scope.job.id ?? '', x.scope.abort) ?? (cause instanceof Error ? cause : new Error(errorText(cause)));
}

/**
 * A tool that stopped because its job was cancelled (or lost its lock) and
 * proved that nothing ran (`NeverStartedError`): its attempt is settled as
 * failed `neverStarted`, so a later claim of the call runs it afresh, and
 * the job ends with the interruption. The breaker does not count it: the
 * tool did not fail, it was stopped.
 */
export async function settleInterrupted(x: Execution, error: unknown, onFencedOut: (e: FencedOutError) => void): Promise<never> {
  const message = errorText(error);
  try {
    const settled = await x.facts.roundTrip('fail', () =>
      x.rt.keyspace.receipts.fail(x.key, x.fence, { error: message, tier: 'neverStarted' }),
    );
    reportLateSettle(x, settled, 'failed');
    await x.limited?.neverStarted();
    x.facts.settled('failed', { tier: 'neverStarted', error }, x.attempt);
  } catch (failError) {
    if (failError instanceof FencedOutError) onFencedOut(failError);
    // Not written (fenced out, or Redis did not answer): the lease lapses as for any interrupted attempt.
  }
  x.facts.answered('execute', 'failed', x.attempt, { error: message, tier: 'neverStarted' });
  throw interruptionOf(x.scope.job.id ?? '', x.scope.abort) ?? error;
}

/**
 * Record a tool's failure on its receipt and the breaker (a refusal,
 * `ToolRefusedError`, as a rejection that the tool's next success ends; a
 * service that could not be reached, `NeverStartedError` with `unreachable`,
 * not at all; any other failure as a failure), then decide what the job does: a destructive
 * failure stops the job; a failure that allows an automatic rerun (nothing
 * ran, or the tool is idempotent) retries the job while it has attempts
 * left; any other failure, and the last attempt, is an error result for the
 * model.
 */
export async function settleFailure(x: Execution, error: unknown, onFencedOut: (e: FencedOutError) => void): Promise<ToolResultBlock> {
  const { rt, scope, call, tool, key, attempt } = x;
  const { tenantId, runId } = scope.data;
  const tier = failureTier(failureFactsOf(error), { idempotent: tool.idempotent });
  const message = errorText(error);
  let settled: SettleResult;
  try {
    settled = await x.facts.roundTrip('fail', () => rt.keyspace.receipts.fail(key, x.fence, { error: message, tier }));
  } catch (failError) {
    if (!(failError instanceof FencedOutError)) throw failError;
    onFencedOut(failError);
    throw fencedOutFailure(x, 'fail', failError);
  }
  reportLateSettle(x, settled, 'failed');
  if (tier === 'neverStarted') await x.limited?.neverStarted();
  // A refusal counts as a rejection (a streak that the tool's next success ends), any other failure as a failure;
  // a service that could not be reached is not the tool's failure, and counts as neither.
  const refused = error instanceof ToolRefusedError;
  const breaker = isUnreachableService(error)
    ? { removed: false }
    : refused
      ? await rt.keyspace.breaker.recordRejection(tenantId, runId, tool.name, {
          reason: `${tool.name} was removed after repeated refusals.`,
        })
      : await rt.keyspace.breaker.recordFailure(tenantId, runId, tool.name, {
          removeNow: tier === 'destructive',
          reason: `${tool.name} was removed after ${tier === 'destructive' ? 'a destructive failure' : 'repeated failures'}.`,
        });
  x.facts.settled('failed', { tier, error }, attempt);
  x.facts.answered('execute', refused ? 'rejected' : 'failed', attempt, { error: message, tier });
  if (refused) {
    return block(call, 'rejected', {
      content: breaker.removed ? `${asSentence(message)} ${REJECTION_REMOVAL_SUFFIX}` : message,
      is_error: true,
    });
  }
  const content = failureContent(tool.name, message, tier);
  const failure = new ToolCallFailedError(tool.name, call.id, tier, content, { cause: error });
  if (tier === 'destructive') throw unrecoverable(failure);
  if (breaker.removed) return block(call, 'failed', { content: `${content} ${REJECTION_REMOVAL_SUFFIX}`, is_error: true });
  if (retriesJob(scope.job, tier, error)) throw failure;
  return block(call, 'failed', { content, is_error: true });
}
