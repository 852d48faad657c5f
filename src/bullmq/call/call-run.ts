/**
 * One tool call, run at most once: its staged input taken, its receipt
 * claimed, the decision acted on (replay, wait, ambiguous, execute), and an
 * execution run under its lease (heartbeats) with its own abort.
 * Over 300 lines: every branch of the decision, in the order a call meets
 * them, then the execution with the lease and abort it runs under.
 */
import { DelayedError } from 'bullmq';
import type { ReceiptDecision } from '../core/decision.js';
import type { ToolCallReceiptKey } from '../core/identity.js';
import { stringifyToolResult } from '../core/result-text.js';
import { NeverStartedError, OutcomeUnknownError, REJECTION_REMOVAL_SUFFIX } from '../core/tiers.js';
import { receiptEffectOf } from '../core/tool-effect.js';
import { CorruptReceiptError, FencedOutError, UnexpectedScriptReplyError, type AttemptFence } from '../redis/errors.js';
import type { ReceiptStore, SettleResult } from '../redis/receipts/store.js';
import { limitCall, type LimitGate } from '../limits/call-limits.js';
import { ToolCallFailedError, unrecoverable } from './errors.js';
import type { FencedOutEvent } from './events.js';
import { toolResultBlock as block, type ToolCall, type ToolResultBlock } from '../core/job-data.js';
import { ambiguousOutcome } from './ambiguity.js';
import { runReadOnlyCall } from './direct-call.js';
import { infrastructureFailure, isInfrastructureError } from './infrastructure.js';
import type { CallAbort, CallRuntime, JobScope, RecordedToolResult } from './call-runtime.js';
import type { CallFacts } from './observer.js';
import { passApprovalGate } from './approval-step.js';
import { runTransactionalAttempt } from './transactional-call.js';
import { ExecutionContext, stageCall, type NextCall } from './prepare-call.js';
import { notRunUnderLimit, overLimit } from './limit-outcome.js';
import {
  abandoned,
  claimCall,
  fencedOutFailure,
  interruptionOf,
  reportLateSettle,
  settleCompleted,
  settleFailure,
  settleInterrupted,
  settlesExpired,
  takeoverOf,
  throwIfInterrupted,
  type Execution,
} from './settle-call.js';
import type { CallClaim } from './settle-expired.js';

export type { CallRuntime, JobScope, PreparedCall, RecordedToolResult } from './call-runtime.js';

/** What a call asks of its limits when the worker has none: nothing to count. */
const UNLIMITED: LimitGate = { kind: 'free' };

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
  const facts = rt.facts.start({ tenantId, runId, tool: call.name, callId: call.id, jobId: scope.job.id });
  try {
    const result = await runObservedCall(rt, scope, call, facts, links);
    facts.ended({ result });
    return result;
  } catch (error) {
    facts.ended({ error });
    throw error;
  }
}

async function runObservedCall(
  rt: CallRuntime,
  scope: JobScope,
  call: ToolCall,
  facts: CallFacts,
  links: CallLinks,
  afterUnknownOutcome = false,
): Promise<ToolResultBlock> {
  const { tenantId, runId } = scope.data;
  const staged = await (links.self?.stage() ?? stageCall(rt, scope, call));
  if (staged.kind === 'unknownTool') {
    facts.answered('reject', 'rejected');
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
    facts.answered('reject', 'rejected');
    return block(call, 'rejected', { content, is_error: true });
  }

  const { key, args } = staged;
  if (rt.runsWithoutReceipt(tool)) {
    facts.decided({ decision: 'direct', attempt: undefined });
    return await runReadOnlyCall(rt, { scope, call, tool, key, args, facts });
  }
  // A job whose lock was lost or that was cancelled (maybe while its input was repaired) claims nothing more.
  throwIfInterrupted(scope.job.id ?? '', scope.abort);
  // A tool with an approval rule passes its gate first: parked while a person decides, answered when denied.
  if (rt.approvals?.of(tool)) {
    const denied = await passApprovalGate(rt, scope, call, tool, key, args, facts);
    if (denied) {
      facts.answered('denied', 'denied');
      return denied;
    }
  }
  // One command: the claim script also reads the tool's breaker state in the run. An expired
  // opaque attempt of a tool that can settle it (keyed, or with a reconcile) is settled here.
  // Claimed already when the call before carried this claim in its complete: then a round trip of its own is
  // made (and observed) only when the decision needs more commands (a takeover, an ambiguous attempt).
  // A call some limit counts reserves its share first (such a call is never claimed ahead).
  const gate = rt.limits === undefined ? UNLIMITED : await limitCall(rt.limits, key, args);
  if (gate.kind === 'refused' || gate.kind === 'invalid_cost') return await overLimit(rt, scope, call, gate, facts);
  const limited = gate.kind === 'claim' ? gate.call : undefined;
  const ahead = await links.self?.claimedAhead(facts);
  const settle = { rt, scope, call, tool, key, args, facts };
  let claim: CallClaim;
  try {
    claim = await (ahead?.answersAlone ? claimCall(settle, ahead) : facts.roundTrip('claim', () => claimCall(settle, ahead)));
  } catch (error) {
    await limited?.release();
    // A corrupt receipt stays corrupt: retrying the job cannot help, and nothing was written.
    if (error instanceof CorruptReceiptError) {
      facts.corrupt(error);
      throw unrecoverable(error);
    }
    throw error;
  }
  facts.claimed(claim.reconciled);
  const decision: ReceiptDecision = claim.decision;
  const verdict = await limited?.afterClaim(decision.kind === 'execute' && claim.toolRemoval === undefined);
  if (verdict?.run === false) return await notRunUnderLimit(rt, scope, call, key, claim, verdict, facts);
  if (decision.kind === 'execute' && claim.toolRemoval !== undefined) {
    // Removed for the run: the claim created and took over nothing, so there is nothing to settle.
    facts.answered('reject', 'rejected');
    return block(call, 'rejected', { content: `${claim.toolRemoval} ${REJECTION_REMOVAL_SUFFIX}`, is_error: true });
  }
  // Plain fields, not conditional spreads: this object is built on every claimed call.
  facts.decided({
    decision: decision.kind,
    attempt: claim.attempt,
    receiptKey: claim.redisKey,
    reason: decision.kind === 'ambiguous' ? decision.reason : undefined,
    reconciled: claim.reconciled,
    keyedRerun: claim.keyedRerun,
  });

  switch (decision.kind) {
    case 'replay': {
      facts.answered('replay', 'replayed');
      return block(call, 'replayed', recordedResult(claim.result));
    }
    case 'wait': {
      // Come back when the lease would lapse, or sooner: the live attempt usually finishes long before.
      const remaining = claim.leaseRemainingMs ?? rt.keyspace.settings.leaseMs;
      const delay = Math.min(remaining, rt.maxWaitMs) + Math.floor(Math.random() * rt.waitJitterMs);
      // A job cancelled meanwhile is not parked to come back: it stops here.
      throwIfInterrupted(scope.job.id ?? '', scope.abort);
      facts.answered('wait', 'waited');
      facts.waiting(delay);
      await scope.park(claim.serverNowMs ?? Date.now(), delay);
      throw new DelayedError(`tool call ${call.id} waits ${delay} ms for a live attempt to finish`);
    }
    case 'ambiguous':
      return ambiguousOutcome(rt.onAmbiguous, call, facts, decision.reason);
    case 'execute': {
      // An execute decision without a removal always comes with the fence of the attempt the claim started.
      if (!claim.fence) throw new UnexpectedScriptReplyError('claim', { redisKey: claim.redisKey, decision });
      const { fence } = claim;
      const x: Execution = { ...settle, fence, attempt: fence.attempt, afterUnknownOutcome, next: links.next, limited };
      if (limited === undefined) return await execute(x);
      try {
        return await execute(x);
      } finally {
        await limited.settled();
      }
    }
  }
}

async function execute(x: Execution): Promise<ToolResultBlock> {
  const { rt, scope, call, tool, key, attempt, fence, facts } = x;
  const { tenantId, runId } = scope.data;

  // Aborted by the job's abort or by the first fence rejection, whichever comes first: nothing is
  // settled after it. Its AbortController is made only if the tool reads ctx.signal.
  const abort = new LazyAbort(scope.abort);
  let fencedDuring: FencedOutEvent['during'] | undefined;
  const fencedOut = (during: FencedOutEvent['during'], error: FencedOutError) => {
    if (fencedDuring) return;
    fencedDuring = during;
    facts.fencedOut(during, attempt, error.observed);
    abort.abort(error);
  };
  const recordedSteps = attempt > 1 && tool.effect === 'resumable' ? await rt.keyspace.receipts.steps(key) : {};
  const ctx = new ExecutionContext({
    receipt: { store: rt.keyspace.receipts, fence },
    attempt,
    key,
    abort,
    tenantId,
    runId,
    sessionId: scope.data.sessionId,
    callId: call.id,
    job: scope.job,
    logger: facts,
    recordedSteps,
    onFencedOut: (error) => fencedOut('step', error),
  });
  const keeper = new LeaseKeeper(rt.keyspace.receipts, key, fence, rt.keyspace.settings.leaseMs, facts, (error) =>
    fencedOut('heartbeat', error),
  ).start();

  let value: unknown;
  let replayed = false;
  try {
    value = await facts.runTool(async () => {
      if (tool.effect !== 'transactional') return tool.execute(x.args, ctx);
      // The tool's writes commit with the outcome row before the receipt completes below.
      const done = await runTransactionalAttempt(tool, x.args, ctx, facts.receiptKey ?? '', fence, () => keeper.confirm());
      replayed = done.replayed;
      return done.value;
    });
  } catch (error) {
    keeper.stop(); // before any await below: an abandoned lease must not be extended meanwhile
    if (fencedDuring) throw fencedOutFailure(x, fencedDuring, error);
    const failing = (fenced: FencedOutError) => fencedOut('fail', fenced);
    if (scope.abort.aborted) {
      // Cancelled, or the lock lost: the job ends with that, whatever the tool threw. The receipt is settled
      // as the tool reports: nothing ran (NeverStartedError), the outcome is unknown (OutcomeUnknownError),
      // or, for any other error (which proves nothing), it is left for its lease to lapse.
      if (error instanceof NeverStartedError) return await settleInterrupted(x, error, failing);
      if (error instanceof OutcomeUnknownError) {
        // Left as a crash would leave it, at once (fenced: an attempt that was taken over writes nothing).
        await rt.keyspace.receipts.markOutcomeUnknown(key, fence, error.message).catch(() => undefined);
        facts.outcomeUnknown(error);
        throw interruptionOf(scope.job.id ?? '', scope.abort) ?? error;
      }
      // First learn whether another attempt already took the call over.
      const takenOver = await takeoverOf(x);
      if (!takenOver) throw abandoned(x, scope.abort.reason, error);
      fencedOut('abort', takenOver);
      throw interruptionOf(scope.job.id ?? '', scope.abort) ?? fencedOutFailure(x, 'abort', error);
    }
    // Redis did not answer, or a write went unacknowledged: not the tool's failure (see infrastructureFailure).
    if (isInfrastructureError(error)) return await infrastructureFailure(x, error);
    if (error instanceof OutcomeUnknownError) return await outcomeUnknown(x, error, failing);
    return await settleFailure(x, error, failing);
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
    fencedOut('complete', error);
    throw fencedOutFailure(x, 'complete', error);
  }
  reportLateSettle(x, settled, 'executed');
  facts.settled('executed', undefined, attempt);
  // A transactional attempt that lost the race to another attempt's commit replays the winner's result.
  const outcome = replayed ? 'replayed' : 'executed';
  facts.answered('execute', outcome, attempt);
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
  const { rt, call, tool, key, attempt, facts } = x;
  try {
    await rt.keyspace.receipts.markOutcomeUnknown(key, x.fence, error.message);
  } catch (markError) {
    if (!(markError instanceof FencedOutError)) throw markError;
    onFencedOut(markError);
    throw fencedOutFailure(x, 'fail', markError);
  }
  facts.outcomeUnknown(error);
  // A transactional call is settled from its outcome row by the next claim, never left ambiguous.
  if (tool.effect === 'transactional' && x.afterUnknownOutcome) throw error;
  const opaque = receiptEffectOf(tool) === 'opaque';
  if (opaque && settlesExpired(tool) && !x.afterUnknownOutcome) {
    // The tool can settle this itself: claim again now, and the claim reconciles it (or re-runs a
    // keyed call) in this delivery. Only once: a second unknown outcome is left ambiguous.
    facts.settlingUnknown(attempt, error.message);
    return await runObservedCall(rt, x.scope, call, facts, { next: x.next }, true);
  }
  facts.answered('execute', opaque ? 'ambiguous' : 'failed', attempt, { error: error.message, tier: 'outcomeUnknown' });
  if (opaque) return ambiguousOutcome(rt.onAmbiguous, call, facts, `${tool.name} reported that its outcome is unknown: ${error.message}`);
  throw new ToolCallFailedError(
    tool.name,
    call.id,
    'neutral',
    `attempt ${attempt} of tool call ${call.id} ended with an unknown outcome (${error.message}); the next delivery takes it over from its recorded steps`,
    { cause: error },
  );
}

/**
 * Extends a receipt lease while a tool runs: every third of the lease, so two
 * heartbeats can be lost before the lease lapses. When the store answers that
 * another attempt owns the receipt, it calls `onFencedOut` once and stops.
 * Other errors (Redis briefly unreachable) are reported and retried on the
 * next tick; if the lease lapses meanwhile, the next heartbeat learns the
 * outcome. A heartbeat that finds the attempt already reported ambiguous
 * (contested) still extends the lease, and is reported once: the attempt
 * goes on, and its settle will be recorded as late.
 */
class LeaseKeeper {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private contestedReported = false;

  constructor(
    private readonly store: ReceiptStore,
    private readonly key: ToolCallReceiptKey,
    private readonly fence: AttemptFence,
    private readonly leaseMs: number,
    private readonly facts: CallFacts,
    private readonly onFencedOut: (error: FencedOutError) => void,
  ) {}

  start(): this {
    const every = Math.max(10, Math.floor(this.leaseMs / 3));
    this.timer = setInterval(() => void this.beat(), every);
    this.timer.unref();
    return this;
  }

  /**
   * One heartbeat now, whose failure rejects: a transactional attempt sends
   * it inside its transaction, before its outcome row, to learn that it
   * still holds the receipt (see `holdLifetime`). Fenced out, it is reported
   * as a timed heartbeat's would be, and the keeper stops.
   */
  async confirm(): Promise<void> {
    try {
      await this.store.heartbeat(this.key, this.fence, this.leaseMs);
    } catch (error) {
      if (error instanceof FencedOutError && !this.stopped) {
        this.stop();
        this.onFencedOut(error);
      }
      throw error;
    }
  }

  /** Stop beating. A heartbeat already in flight may still land; its answer is ignored. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
  }

  private async beat(): Promise<void> {
    try {
      const beat = await this.store.heartbeat(this.key, this.fence, this.leaseMs);
      if (beat.contested && !this.contestedReported && !this.stopped) {
        this.contestedReported = true;
        this.facts.contested(this.fence.attempt);
      }
    } catch (error) {
      if (this.stopped) return;
      if (error instanceof FencedOutError) {
        this.stop();
        this.onFencedOut(error);
        return;
      }
      this.facts.heartbeatFailed(this.fence.attempt, error);
    }
  }
}

/**
 * Make `target` abort (with the same reason) when `source` does. Returns a
 * function that removes the link. Cheaper than `AbortSignal.any`, which the
 * wrapper would otherwise create twice per call.
 */
export function forwardAbort(source: AbortSignal | undefined, target: AbortController): () => void {
  if (!source) return () => undefined;
  if (source.aborted) {
    target.abort(source.reason);
    return () => undefined;
  }
  const onAbort = () => target.abort(source.reason);
  source.addEventListener('abort', onAbort, { once: true });
  return () => source.removeEventListener('abort', onAbort);
}

/**
 * Abort state that makes its `AbortSignal` only when something reads
 * `signal`. A job and each executed call need one that follows its parent
 * (BullMQ's signal, the job's), yet most calls end without anyone asking for
 * the signal, and an AbortController with its listener link is among the
 * dearest things a call would otherwise create (the bench measures it).
 * `aborted` and `reason` read through to the parent without making anything.
 *
 * The first abort wins: its reason is the one every reader sees, whether it
 * came from the parent or from {@link abort}.
 */
export class LazyAbort implements CallAbort {
  #controller: AbortController | undefined;
  #unlink: (() => void) | undefined;
  #aborted = false;
  #reason: unknown;

  constructor(private readonly parent?: AbortSignal | CallAbort) {}

  get aborted(): boolean {
    return this.#aborted || (this.parent?.aborted ?? false);
  }

  get reason(): unknown {
    return this.#aborted ? this.#reason : this.parent?.reason;
  }

  /** A real signal, made on first read, linked to the parent's until {@link dispose}. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      const controller = new AbortController();
      this.#controller = controller;
      if (this.aborted) controller.abort(this.reason);
      else if (this.parent) this.#unlink = forwardAbort(this.parent instanceof AbortSignal ? this.parent : this.parent.signal, controller);
    }
    return this.#controller.signal;
  }

  /** Aborts with `reason` unless already aborted (by the parent or earlier). */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }

  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }

  /** Removes the link to the parent's signal, if a signal was made. */
  dispose(): void {
    this.#unlink?.();
    this.#unlink = undefined;
  }
}
