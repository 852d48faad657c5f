/**
 * One tool call, run at most once: its input prepared, its receipt claimed,
 * the decision acted on (replay, wait, ambiguous, execute under its lease).
 * Over 300 lines: every branch of the decision, in the order a call meets them.
 */
import { DelayedError } from 'bullmq';
import type { Logger } from 'pino';
import type { ReceiptDecision } from '../core/decision.js';
import { NeverStartedError, OutcomeUnknownError, REJECTION_REMOVAL_SUFFIX } from '../core/tiers.js';
import { CorruptReceiptError, FencedOutError, UnexpectedScriptReplyError } from '../redis/errors.js';
import type { SettleResult } from '../redis/receipts/store.js';
import { createToolContext } from './call-context.js';
import { receiptEffectOf } from './define-tool.js';
import { ToolCallFailedError, unrecoverable } from './errors.js';
import type { FencedOutEvent, ToolCallEventBase } from './events.js';
import { toolResultBlock as block, type ToolCall, type ToolCallOutcome, type ToolResultBlock } from './job-data.js';
import { LeaseKeeper } from './lease-keeper.js';
import { LazyAbort } from './abort.js';
import { stringifyToolResult } from '../offload/shaping.js';
import { ambiguousOutcome } from './ambiguity.js';
import { runReadOnlyCall, type FailureLog } from './direct-call.js';
import { interruptionOf, throwIfInterrupted } from './interruption.js';
import { infrastructureFailure, isInfrastructureError } from './infrastructure.js';
import type { CallRuntime, JobScope, RecordedToolResult } from './call-runtime.js';
import type { CallObservation } from './observer.js';
import { claimCall, settlesExpired } from './settle-expired.js';
import { passApprovalGate } from './approval-step.js';
import { runTransactionalAttempt } from './transactional-call.js';
import { stageCall, type NextCall } from './next-call.js';
import { limitCall } from '../limits/call-limits.js';
import { notRunUnderLimit, overLimit } from './limit-outcome.js';
import {
  abandoned,
  emitIfListened,
  fencedOutFailure,
  reportLateSettle,
  settleCompleted,
  settleFailure,
  settleInterrupted,
  takeoverOf,
  type Execution,
} from './settle-call.js';

export type { CallRuntime, JobScope, PreparedCall, RecordedToolResult } from './call-runtime.js';

/**
 * The result a completed receipt holds, as a tool_result. Receipts the
 * wrapper completed hold a {@link RecordedToolResult}; one an operator
 * resolved may hold any JSON value, or none.
 */
function recordedResult(stored: unknown): RecordedToolResult {
  if (typeof stored === 'object' && stored !== null && typeof (stored as RecordedToolResult).content === 'string') {
    return stored as RecordedToolResult;
  }
  if (stored === undefined) return { content: 'This call already completed (settled by an operator); no result was recorded.' };
  return { content: stringifyToolResult(stored) };
}

/**
 * How a call is linked to its neighbours in a sequential stretch of a turn:
 * `self` is this call as the call before staged it (and maybe claimed it, in
 * its complete); `next` is the call after it, which this call's complete may
 * claim. See `NextCall`.
 */
export interface CallLinks {
  readonly self?: NextCall;
  readonly next?: NextCall;
}

/**
 * Run one tool call at most once: prepare its input, claim its receipt, and
 * act on the decision. Returns the block to hand back to the model, or
 * throws what BullMQ should see (DelayedError to come back later,
 * UnrecoverableError to stop, any other error to retry the job).
 */
export async function runToolCall(rt: CallRuntime, scope: JobScope, call: ToolCall, links: CallLinks = {}): Promise<ToolResultBlock> {
  const { tenantId, runId } = scope.data;
  const obs = rt.observer.callStarted({ tenantId, runId, tool: call.name, callId: call.id, jobId: scope.job.id });
  try {
    const result = await runObservedCall(rt, scope, call, obs, links);
    obs.ended({ result });
    return result;
  } catch (error) {
    obs.ended({ error });
    throw error;
  }
}

async function runObservedCall(
  rt: CallRuntime,
  scope: JobScope,
  call: ToolCall,
  obs: CallObservation,
  links: CallLinks,
  options: { readonly afterUnknownOutcome?: boolean } = {},
): Promise<ToolResultBlock> {
  const started = performance.now();
  const { tenantId, runId } = scope.data;
  // The call's child logger is made on first use: with info lines off, a call that goes well never makes one.
  let callLogger: Logger | undefined;
  const log = () =>
    (callLogger ??= rt.logger.child({ tenant: tenantId, run: runId, tool: call.name, callId: call.id, jobId: scope.job.id }));
  let reconciled: string | undefined;
  // A call that failed (or ended ambiguous) is a warning, with its tier; any other decision is an info line.
  const logDecision = (decision: string, outcome: ToolCallOutcome | 'waited', attempt?: number, failure?: FailureLog) => {
    const level = failure && outcome !== 'rejected' ? 'warn' : 'info';
    if (!rt.logger.isLevelEnabled(level)) return;
    const ms = Math.round(performance.now() - started);
    log()[level](
      failure ? { decision, outcome, attempt, reconciled, ...failure, ms } : { decision, outcome, attempt, reconciled, ms },
      'tool call',
    );
  };

  const staged = await (links.self?.stage() ?? stageCall(rt, scope, call));
  if (staged.kind === 'unknownTool') {
    logDecision('reject', 'rejected');
    return block(call, 'rejected', {
      content: `Unknown tool "${call.name}". Nothing was run. Available tools: ${[...rt.tools.keys()].join(', ')}.`,
      is_error: true,
    });
  }
  const { tool } = staged;
  if (staged.kind === 'rejected') {
    let content = staged.prepared.message;
    if (staged.prepared.countsAsRejection) {
      const streak = await rt.keyspace.breaker.recordRejection(tenantId, runId, tool.name);
      if (streak.removed) content += ` ${REJECTION_REMOVAL_SUFFIX}`;
    }
    logDecision('reject', 'rejected');
    return block(call, 'rejected', { content, is_error: true });
  }

  const { key, args } = staged;
  if (rt.runsWithoutReceipt(tool)) {
    obs.decided({ decision: 'direct', attempt: undefined });
    return await runReadOnlyCall(rt, { scope, call, tool, key, args, log, logDecision, obs });
  }
  // A job whose lock was lost or that was cancelled (maybe while its input was repaired) claims nothing more.
  throwIfInterrupted(scope.job.id ?? '', scope.abort);
  // A tool with an approval rule passes its gate first: parked while a person decides, answered when denied.
  if (rt.approvals?.of(tool)) {
    const denied = await passApprovalGate(rt, scope, call, tool, key, args, obs);
    if (denied) {
      logDecision('denied', 'denied');
      return denied;
    }
  }
  // One command: the claim script also reads the tool's breaker state in the run. An expired
  // opaque attempt of a tool that can settle it (keyed, or with a reconcile) is settled here.
  // Claimed already when the call before carried this claim in its complete: then a round trip of its own is
  // made (and observed) only when the decision needs more commands (a takeover, an ambiguous attempt).
  // A call some limit counts reserves its share first (such a call is never claimed ahead).
  const gate = await limitCall(rt.limits, key, args);
  if (gate.kind === 'refused' || gate.kind === 'invalid_cost') return await overLimit(rt, scope, call, gate, logDecision);
  const limited = gate.kind === 'claim' ? gate.call : undefined;
  const ahead = await links.self?.claimedAhead(obs);
  const claiming = () => claimCall({ rt, scope, call, tool, key, args, log }, ahead);
  const claim = await (ahead?.answersAlone ? claiming() : obs.roundTrip('claim', claiming)).catch(async (error: unknown) => {
    await limited?.release();
    // A corrupt receipt stays corrupt: retrying the job cannot help, and nothing was written.
    if (error instanceof CorruptReceiptError) {
      log().error({ receiptKey: error.redisKey, why: error.why }, 'receipt is corrupt; call not run');
      throw unrecoverable(error);
    }
    throw error;
  });
  reconciled = claim.reconciled;
  const decision: ReceiptDecision = claim.decision;
  const verdict = await limited?.afterClaim(decision.kind === 'execute' && claim.toolRemoval === undefined);
  if (verdict?.run === false) return await notRunUnderLimit(rt, scope, call, key, claim, verdict, logDecision);
  if (decision.kind === 'execute' && claim.toolRemoval !== undefined) {
    // Removed for the run: the claim created and took over nothing, so there is nothing to settle.
    logDecision('reject', 'rejected');
    return block(call, 'rejected', { content: `${claim.toolRemoval} ${REJECTION_REMOVAL_SUFFIX}`, is_error: true });
  }
  const base: ToolCallEventBase = { tenantId, runId, tool: tool.name, callId: call.id, jobId: scope.job.id, receiptKey: claim.redisKey };
  emitIfListened(rt.events, 'decision', () => ({
    ...base,
    decision: decision.kind,
    attempt: claim.attempt,
    ...(claim.reconciled ? { reconciled: claim.reconciled } : {}),
  }));
  // Plain fields, not conditional spreads: this object is built on every claimed call.
  obs.decided({
    decision: decision.kind,
    attempt: claim.attempt,
    receiptKey: claim.redisKey,
    reason: decision.kind === 'ambiguous' ? decision.reason : undefined,
    reconciled: claim.reconciled,
    keyedRerun: claim.keyedRerun,
  });

  switch (decision.kind) {
    case 'replay': {
      logDecision('replay', 'replayed');
      return block(call, 'replayed', recordedResult(claim.result));
    }
    case 'wait': {
      // Come back when the lease would lapse, or sooner: the live attempt usually finishes long before.
      const remaining = claim.leaseRemainingMs ?? rt.keyspace.settings.leaseMs;
      const delay = Math.min(remaining, rt.maxWaitMs) + Math.floor(Math.random() * rt.waitJitterMs);
      // A job cancelled meanwhile is not parked to come back: it stops here.
      throwIfInterrupted(scope.job.id ?? '', scope.abort);
      logDecision('wait', 'waited');
      obs.waiting(delay);
      await scope.park(claim.serverNowMs ?? Date.now(), delay);
      throw new DelayedError(`tool call ${call.id} waits ${delay} ms for a live attempt to finish`);
    }
    case 'ambiguous':
      return ambiguousOutcome(rt, call, base, decision.reason, log());
    case 'execute': {
      // An execute decision without a removal always comes with the fence of the attempt the claim started.
      if (!claim.fence) throw new UnexpectedScriptReplyError('claim', { redisKey: claim.redisKey, decision });
      return await execute({
        rt,
        scope,
        call,
        tool,
        key,
        args,
        fence: claim.fence,
        attempt: claim.fence.attempt,
        base,
        log,
        logDecision,
        obs,
        afterUnknownOutcome: options.afterUnknownOutcome ?? false,
        next: links.next,
        limited,
      }).finally(() => limited?.settled());
    }
  }
}

async function execute(x: Execution): Promise<ToolResultBlock> {
  const { rt, scope, call, tool, key, attempt, fence, log } = x;
  const { tenantId, runId } = scope.data;

  // Aborted by the job's abort or by the first fence rejection, whichever comes first: nothing is
  // settled after it. Its AbortController is made only if the tool reads ctx.signal.
  const abort = new LazyAbort(scope.abort);
  let fencedDuring: FencedOutEvent['during'] | undefined;
  const onFencedOut = (during: FencedOutEvent['during']) => (error: FencedOutError) => {
    if (fencedDuring) return;
    fencedDuring = during;
    rt.events.emit('fencedOut', { ...x.base, attempt, during });
    x.obs.fencedOut(during);
    log().warn({ attempt, during, observed: error.observed }, 'attempt fenced out; another attempt owns the call');
    abort.abort(error);
  };
  const recordedSteps = attempt > 1 && tool.effect === 'resumable' ? await rt.keyspace.receipts.steps(key) : {};
  const ctx = createToolContext({
    receipt: { store: rt.keyspace.receipts, fence },
    attempt,
    key,
    abort,
    tenantId,
    runId,
    sessionId: scope.data.sessionId,
    callId: call.id,
    job: scope.job,
    logger: log,
    recordedSteps,
    onFencedOut: onFencedOut('step'),
  });
  const keeper = new LeaseKeeper(rt.keyspace.receipts, key, fence, rt.keyspace.settings.leaseMs, log, onFencedOut('heartbeat')).start();

  let value: unknown;
  let replayed = false;
  try {
    value = await x.obs.runTool(async () => {
      if (tool.effect !== 'transactional') return tool.execute(x.args, ctx);
      // The tool's writes commit with the outcome row before the receipt completes below.
      const done = await runTransactionalAttempt(tool, x.args, ctx, x.base.receiptKey, fence);
      replayed = done.replayed;
      return done.value;
    });
  } catch (error) {
    keeper.stop(); // before any await below: an abandoned lease must not be extended meanwhile
    if (fencedDuring) throw fencedOutFailure(x, fencedDuring, error);
    if (scope.abort.aborted) {
      // Cancelled, or the lock lost: the job ends with that, whatever the tool threw. The receipt is settled
      // as the tool reports: nothing ran (NeverStartedError), the outcome is unknown (OutcomeUnknownError),
      // or, for any other error (which proves nothing), it is left for its lease to lapse.
      if (error instanceof NeverStartedError) return await settleInterrupted(x, error, onFencedOut('fail'));
      if (error instanceof OutcomeUnknownError) {
        // Left as a crash would leave it, at once (fenced: an attempt that was taken over writes nothing).
        await rt.keyspace.receipts.markOutcomeUnknown(key, fence, error.message).catch(() => undefined);
        x.obs.outcomeUnknown(error);
        throw interruptionOf(scope.job.id ?? '', scope.abort) ?? error;
      }
      // First learn whether another attempt already took the call over.
      const takenOver = await takeoverOf(x);
      if (!takenOver) throw abandoned(x, scope.abort.reason, error);
      onFencedOut('abort')(takenOver);
      throw interruptionOf(scope.job.id ?? '', scope.abort) ?? fencedOutFailure(x, 'abort', error);
    }
    // Redis did not answer, or a write went unacknowledged: not the tool's failure (see infrastructureFailure).
    if (isInfrastructureError(error)) return await infrastructureFailure(x, error);
    if (error instanceof OutcomeUnknownError) return await outcomeUnknown(x, error, onFencedOut('fail'));
    return await settleFailure(x, error, onFencedOut('fail'));
  } finally {
    keeper.stop();
    abort.dispose();
  }
  if (fencedDuring) throw fencedOutFailure(x, fencedDuring);

  const result = await rt.shape(value, call, tool, scope.data);
  let settled: SettleResult;
  try {
    // Also ends the tool's rejection streak in the run, in the same script, and may claim the next call.
    settled = await settleCompleted(x, result);
  } catch (error) {
    if (!(error instanceof FencedOutError)) throw error;
    onFencedOut('complete')(error);
    throw fencedOutFailure(x, 'complete', error);
  }
  reportLateSettle(x, settled, 'executed');
  emitIfListened(rt.events, 'settled', () => ({ ...x.base, attempt, outcome: 'executed' }));
  x.obs.settled('executed');
  // A transactional attempt that lost the race to another attempt's commit replays the winner's result.
  const outcome = replayed ? 'replayed' : 'executed';
  x.logDecision('execute', outcome, attempt);
  return block(call, outcome, result);
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
async function outcomeUnknown(
  x: Execution,
  error: OutcomeUnknownError,
  onFencedOut: (e: FencedOutError) => void,
): Promise<ToolResultBlock> {
  const { rt, call, tool, key, attempt } = x;
  try {
    await rt.keyspace.receipts.markOutcomeUnknown(key, x.fence, error.message);
  } catch (markError) {
    if (!(markError instanceof FencedOutError)) throw markError;
    onFencedOut(markError);
    throw fencedOutFailure(x, 'fail', markError);
  }
  x.obs.outcomeUnknown(error);
  // A transactional call is settled from its outcome row by the next claim, never left ambiguous.
  if (tool.effect === 'transactional' && x.afterUnknownOutcome) throw error;
  const opaque = receiptEffectOf(tool) === 'opaque';
  if (opaque && settlesExpired(tool) && !x.afterUnknownOutcome) {
    // The tool can settle this itself: claim again now, and the claim reconciles it (or re-runs a
    // keyed call) in this delivery. Only once: a second unknown outcome is left ambiguous.
    x.log().info({ attempt, error: error.message, tier: 'outcomeUnknown' }, 'tool call outcome unknown; settling it');
    return await runObservedCall(rt, x.scope, call, x.obs, { next: x.next }, { afterUnknownOutcome: true });
  }
  x.logDecision('execute', opaque ? 'ambiguous' : 'failed', attempt, { error: error.message, tier: 'outcomeUnknown' });
  if (opaque) {
    return ambiguousOutcome(rt, call, x.base, `${tool.name} reported that its outcome is unknown: ${error.message}`, x.log());
  }
  throw new ToolCallFailedError(
    tool.name,
    call.id,
    'neutral',
    `attempt ${attempt} of tool call ${call.id} ended with an unknown outcome (${error.message}); the next delivery takes it over from its recorded steps`,
    { cause: error },
  );
}
