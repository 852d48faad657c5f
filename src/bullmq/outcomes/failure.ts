/**
 * How an attempt whose tool did not return ends on its receipt: a failure
 * recorded with its tier (and on the breaker), an attempt stopped by its
 * job's cancel or lost lock (settled as never started, or left for its lease
 * to lapse), an outcome the tool could not know, and an attempt fenced out
 * because another took the call over. Entered only when the tool threw.
 */
import { failureFactsOf, failureTier, isUnreachableService, REJECTION_REMOVAL_SUFFIX, ToolRefusedError } from '../../core/tiers.js';
import { receiptEffectOf } from '../../core/tool-effect.js';
import type { OutcomeUnknownError } from '../../core/tiers.js';
import { FencedOutError } from '../../redis/errors.js';
import type { SettleResult } from '../../redis/receipts/store.js';
import type { StandingFailure } from '../../redis/receipts/store-types.js';
import { toolResultBlock as block, type ToolResultBlock } from '../../core/job-data.js';
import { ToolCallFailedError, unrecoverable } from '../errors.js';
import type { FencedOutEvent } from '../events.js';
import type { CallAttempt } from '../runtime.js';
import { interruptionOf } from '../call/interruption.js';
import { asSentence, errorText, failureContent, retriesJob } from '../tools/failure-text.js';
import { ambiguousOutcome } from './ambiguity.js';

/** Whether a tool settles its own expired attempts: it is keyed, transactional, or has a `reconcile`. */
export const settlesExpired = (tool: CallAttempt['tool']): boolean =>
  tool.effect === 'keyed' || tool.effect === 'transactional' || tool.reconcile !== undefined;

/**
 * The error a fenced-out attempt leaves the job with. It is retryable: the
 * job's next delivery claims again and finds the attempt that took over
 * (wait) or its result (replay).
 */
export function fencedOutFailure(callRun: CallAttempt, during: FencedOutEvent['during'], cause?: unknown): Error {
  return new ToolCallFailedError(
    callRun.tool.name,
    callRun.call.id,
    'neutral',
    `attempt ${callRun.attempt} of tool call ${callRun.call.id} was fenced out during ${during}; another attempt owns it`,
    { cause },
  );
}

/**
 * Read the receipt once (no write, so a lease left to lapse is not renewed)
 * and report whether another attempt owns it now.
 */
export async function takeoverOf(callRun: CallAttempt): Promise<FencedOutError | undefined> {
  const now = await callRun.runtime.keyspace.receipts.inspect(callRun.key).catch(() => null);
  if (!now || (now.status === 'running' && now.attempts === callRun.fence.attempt && now.epoch === callRun.fence.epoch)) return undefined;
  return new FencedOutError(now.redisKey, callRun.fence, { status: now.status, attempts: now.attempts, epoch: now.epoch }, 'abort');
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
export function abandoned(callRun: CallAttempt, reason: unknown, cause: unknown): Error {
  callRun.facts.aborted(reason, callRun.attempt, cause);
  return interruptionOf(callRun.scope.job.id ?? '', callRun.scope.abort) ?? (cause instanceof Error ? cause : new Error(errorText(cause)));
}

/**
 * A tool that stopped because its job was cancelled (or lost its lock) and
 * proved that nothing ran (`NeverStartedError`): its attempt is settled as
 * failed `neverStarted`, so a later claim of the call runs it afresh, and
 * the job ends with the interruption. The breaker does not count it: the
 * tool did not fail, it was stopped.
 */
export async function settleInterrupted(callRun: CallAttempt, error: unknown, onFencedOut: (e: FencedOutError) => void): Promise<never> {
  const message = errorText(error);
  try {
    const settled = await callRun.facts.roundTrip('fail', () =>
      callRun.runtime.keyspace.receipts.fail(callRun.key, callRun.fence, { error: message, tier: 'neverStarted' }),
    );
    callRun.facts.lateSettleOf(settled, 'failed', callRun.attempt);
    await callRun.limited?.neverStarted();
    callRun.facts.settled('failed', { tier: 'neverStarted', error }, callRun.attempt);
  } catch (failError) {
    if (failError instanceof FencedOutError) onFencedOut(failError);
    // Not written (fenced out, or Redis did not answer): the lease lapses as for any interrupted attempt.
  }
  callRun.facts.answered('execute', 'failed', callRun.attempt, { error: message, tier: 'neverStarted' });
  throw interruptionOf(callRun.scope.job.id ?? '', callRun.scope.abort) ?? error;
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
export async function settleFailure(
  callRun: CallAttempt,
  error: unknown,
  onFencedOut: (e: FencedOutError) => void,
): Promise<ToolResultBlock> {
  const { runtime, scope, call, tool, key, attempt } = callRun;
  const { tenantId, runId } = scope.data;
  const tier = failureTier(failureFactsOf(error), { idempotent: tool.idempotent });
  const message = errorText(error);
  let settled: SettleResult;
  try {
    settled = await callRun.facts.roundTrip('fail', () => runtime.keyspace.receipts.fail(key, callRun.fence, { error: message, tier }));
  } catch (failError) {
    if (!(failError instanceof FencedOutError)) throw failError;
    onFencedOut(failError);
    throw fencedOutFailure(callRun, 'fail', failError);
  }
  callRun.facts.lateSettleOf(settled, 'failed', callRun.attempt);
  if (tier === 'neverStarted') await callRun.limited?.neverStarted();
  // A refusal counts as a rejection (a streak that the tool's next success ends), any other failure as a failure;
  // a service that could not be reached is not the tool's failure, and counts as neither.
  const refused = error instanceof ToolRefusedError;
  const breaker = isUnreachableService(error)
    ? { removed: false }
    : refused
      ? await runtime.keyspace.breaker.recordRejection(tenantId, runId, tool.name, {
          reason: `${tool.name} was removed after repeated refusals.`,
        })
      : await runtime.keyspace.breaker.recordFailure(tenantId, runId, tool.name, {
          removeNow: tier === 'destructive',
          reason: tier === 'destructive' ? destructiveRemoval(tool.name) : `${tool.name} was removed after repeated failures.`,
        });
  callRun.facts.settled('failed', { tier, error }, attempt);
  callRun.facts.answered('execute', refused ? 'rejected' : 'failed', attempt, { error: message, tier });
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

/**
 * A failure this job recorded, of a tier it is never retried for, met again
 * by a later delivery of the job (a retry for another of its calls, a
 * redelivery after a crash): the tool may have had its effect, so it is not
 * run again; the model gets the failure it would have got, and a
 * destructive one stops the job as it did. Nothing is written to the
 * receipt, and the breaker counted the failure when it was recorded; only
 * a destructive one's removal of the tool is made sure of (a worker that
 * died between the receipt's write and the breaker's left the tool in
 * place), without counting the failure twice.
 */
export async function failureStands(callRun: CallAttempt, failure: StandingFailure): Promise<ToolResultBlock> {
  const { runtime, scope, call, tool, facts } = callRun;
  facts.answered('replay', 'failed', undefined, { error: failure.error, tier: failure.tier });
  const content = failureContent(tool.name, failure.error, failure.tier);
  if (failure.tier !== 'destructive') return block(call, 'failed', { content, is_error: true });
  const { tenantId, runId } = scope.data;
  if ((await runtime.keyspace.breaker.removal(tenantId, runId, tool.name)) === null) {
    await runtime.keyspace.breaker.recordFailure(tenantId, runId, tool.name, {
      removeNow: true,
      reason: destructiveRemoval(tool.name),
    });
  }
  throw unrecoverable(new ToolCallFailedError(tool.name, call.id, failure.tier, content));
}

/**
 * The tool said it cannot tell whether its effect landed: leave the receipt
 * as a crash would (running, lease expired now; an opaque one flagged
 * ambiguous), so nothing runs it again blindly. An opaque call whose tool
 * can settle it (a `reconcile`, or `keyed`) is claimed again at once, once,
 * and the claim settles it; any other opaque call is ambiguous at once (per
 * `onAmbiguous`); a resumable one fails this delivery, and the job's next
 * delivery takes it over from its recorded steps.
 */
export async function outcomeUnknown(
  callRun: CallAttempt,
  error: OutcomeUnknownError,
  onFencedOut: (e: FencedOutError) => void,
): Promise<ToolResultBlock> {
  const { runtime, call, tool, key, attempt, facts } = callRun;
  try {
    await runtime.keyspace.receipts.markOutcomeUnknown(key, callRun.fence, error.message);
  } catch (markError) {
    if (!(markError instanceof FencedOutError)) throw markError;
    onFencedOut(markError);
    throw fencedOutFailure(callRun, 'fail', markError);
  }
  facts.outcomeUnknown(error);
  // A transactional call is settled from its outcome row by the next claim, never left ambiguous.
  if (tool.effect === 'transactional' && callRun.afterUnknownOutcome) throw error;
  const opaque = receiptEffectOf(tool) === 'opaque';
  if (opaque && settlesExpired(tool) && !callRun.afterUnknownOutcome) {
    // The tool can settle this itself: claim again now, and the claim reconciles it (or re-runs a
    // keyed call) in this delivery. Only once: a second unknown outcome is left ambiguous.
    facts.settlingUnknown(attempt, error.message);
    return await callRun.claimAgain();
  }
  facts.answered('execute', opaque ? 'ambiguous' : 'failed', attempt, { error: error.message, tier: 'outcomeUnknown' });
  if (opaque)
    return ambiguousOutcome(runtime.onAmbiguous, call, facts, `${tool.name} reported that its outcome is unknown: ${error.message}`);
  // The job's last attempt: no next delivery takes the call over, so the model is told, as after any failure it
  // is not retried for; its next call of the tool (a new job) takes the attempt over from its recorded steps.
  if (callRun.scope.job.attemptsMade + 1 >= (callRun.scope.job.opts.attempts ?? 1)) {
    return block(call, 'failed', {
      content: `Tool ${tool.name} could not tell whether its last step took effect: ${asSentence(error.message)} Calling it again resumes it from its recorded steps.`,
      is_error: true,
    });
  }
  throw new ToolCallFailedError(
    tool.name,
    call.id,
    'neutral',
    `attempt ${attempt} of tool call ${call.id} ended with an unknown outcome (${error.message}); the next delivery takes it over from its recorded steps`,
    { cause: error },
  );
}

/** Why a tool was removed for its run by a destructive failure. */
function destructiveRemoval(toolName: string): string {
  return `${toolName} was removed after a destructive failure.`;
}
