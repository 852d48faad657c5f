/**
 * How an executed call's attempt ends on its receipt: the complete (which
 * may carry the next call's claim), the failure settle and what it tells the
 * job, and the errors of an attempt that was fenced out or aborted. Split
 * from run-call.ts, which decides and executes.
 */
import type { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { ToolCallReceiptKey } from '../core/identity.js';
import { failureFactsOf, failureTier, isUnreachableService, REJECTION_REMOVAL_SUFFIX, ToolRefusedError } from '../core/tiers.js';
import { FencedOutError, type AttemptFence } from '../redis/errors.js';
import type { SettleResult } from '../redis/receipts/store.js';
import type { CallRuntime, JobScope, RecordedToolResult } from './call-runtime.js';
import type { AnyToolDefinition } from './define-tool.js';
import { ToolCallFailedError, unrecoverable } from './errors.js';
import type { FencedOutEvent, ToolCallEventBase, ToolReceiptsEventMap, ToolReceiptsEvents } from './events.js';
import type { FailureLog } from './direct-call.js';
import { asSentence, errorText, failureContent, retriesJob } from './failure-policy.js';
import { toolResultBlock as block, type ToolCall, type ToolCallOutcome, type ToolResultBlock } from './job-data.js';
import type { NextCall } from './next-call.js';
import { interruptionOf } from './interruption.js';
import type { CallObservation } from './observer.js';
import type { LimitedCall } from '../limits/call-limits.js';

/**
 * Emits `name` only when someone listens, building the payload then: with no
 * listener (the usual worker) a call allocates no event objects.
 */
export function emitIfListened<K extends keyof ToolReceiptsEventMap>(
  events: ToolReceiptsEvents,
  name: K,
  payload: () => ToolReceiptsEventMap[K][0],
): void {
  if (events.listenerCount(name) === 0) return;
  // The typed emit cannot see that one payload is the whole argument list of every event.
  (events as EventEmitter).emit(name, payload());
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
  readonly base: ToolCallEventBase;
  /** The call's logger, made on first use. */
  readonly log: () => Logger;
  readonly logDecision: (decision: string, outcome: ToolCallOutcome, attempt?: number, failure?: FailureLog) => void;
  readonly obs: CallObservation;
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
    return x.obs.roundTrip('complete', () => rt.keyspace.receipts.complete(key, fence, result));
  const { settled, ahead } = await x.obs.roundTrip('completeAndClaim', () =>
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
  const { ambiguousMs } = settled.late;
  x.rt.events.emit('lateSettle', { ...x.base, attempt: x.attempt, outcome, ambiguousMs, settledMs: settled.settledMs });
  x.obs.lateSettle(outcome);
  x.log().warn(
    { attempt: x.attempt, outcome, receiptKey: x.base.receiptKey, ambiguousMs, settledMs: settled.settledMs },
    'tool call settled late: a claim had already reported it ambiguous; the receipt records this settle',
  );
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
  x.log().warn(
    { attempt: x.attempt, reason: errorText(reason), error: errorText(cause) },
    'attempt aborted; receipt left for its lease to lapse',
  );
  x.obs.aborted(reason);
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
    const settled = await x.obs.roundTrip('fail', () =>
      x.rt.keyspace.receipts.fail(x.key, x.fence, { error: message, tier: 'neverStarted' }),
    );
    reportLateSettle(x, settled, 'failed');
    await x.limited?.neverStarted();
    x.rt.events.emit('settled', { ...x.base, attempt: x.attempt, outcome: 'failed' });
    x.obs.settled('failed', { tier: 'neverStarted', error });
  } catch (failError) {
    if (failError instanceof FencedOutError) onFencedOut(failError);
    // Not written (fenced out, or Redis did not answer): the lease lapses as for any interrupted attempt.
  }
  x.logDecision('execute', 'failed', x.attempt, { error: message, tier: 'neverStarted' });
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
    settled = await x.obs.roundTrip('fail', () => rt.keyspace.receipts.fail(key, x.fence, { error: message, tier }));
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
  rt.events.emit('settled', { ...x.base, attempt, outcome: 'failed' });
  x.obs.settled('failed', { tier, error });
  x.logDecision('execute', refused ? 'rejected' : 'failed', attempt, { error: message, tier });
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
