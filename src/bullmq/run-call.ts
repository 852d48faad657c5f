import type { EventEmitter } from 'node:events';
import { DelayedError, type Job } from 'bullmq';
import type { Logger } from 'pino';
import type { ReceiptDecision } from '../core/decision.js';
import { toolCallArgsHash, type DigestFn, type ToolCallReceiptKey } from '../core/identity.js';
import { failureFactsOf, failureTier, NeverStartedError, OutcomeUnknownError, REJECTION_REMOVAL_SUFFIX, ToolRefusedError } from '../core/tiers.js';
import type { BreakerStore } from '../redis/breaker-store.js';
import { CorruptReceiptError, FencedOutError, UnexpectedScriptReplyError, type AttemptFence } from '../redis/errors.js';
import type { ReceiptStore, SettleResult } from '../redis/receipt-store.js';
import type { ReconcileStore } from '../redis/reconcile-store.js';
import { createToolContext } from './call-context.js';
import { receiptEffectOf, type AnyToolDefinition } from './define-tool.js';
import { ToolCallFailedError, unrecoverable } from './errors.js';
import type { FencedOutEvent, ToolCallEventBase, ToolReceiptsEventMap, ToolReceiptsEvents } from './events.js';
import { toolResultBlock as block, type ToolCall, type ToolCallOutcome, type ToolJobData, type ToolResultBlock } from './job-data.js';
import { LeaseKeeper } from './lease-keeper.js';
import { LazyAbort } from './abort.js';
import { stringifyToolResult } from '../offload/shaping.js';
import { ambiguousOutcome } from './ambiguity.js';
import { runReadOnlyCall, type FailureLog } from './direct-call.js';
import { errorText, failureContent, retriesJob } from './failure-policy.js';
import { throwIfInterrupted } from './interruption.js';
import type { CallObservation, ToolCallObserver } from './observer.js';
import { claimCall, settlesExpired } from './settle-expired.js';

/** What a receipt stores as a call's result, and what a replay returns. */
export interface RecordedToolResult {
  readonly content: string;
  readonly is_error?: true;
}

/** The input a call will run with, or why it will not run. */
export type PreparedCall =
  | { readonly ok: true; readonly rawInput: unknown; readonly args: unknown }
  | { readonly ok: false; readonly message: string; readonly countsAsRejection: boolean };

/** The wrapper's fixed collaborators, shared by every call. */
export interface CallRuntime {
  readonly store: ReceiptStore;
  /** Reconcile leases and keyed re-runs, on the same connection and prefix as `store`. */
  readonly reconciles: ReconcileStore;
  readonly breaker: BreakerStore;
  readonly tools: ReadonlyMap<string, AnyToolDefinition>;
  readonly logger: Logger;
  readonly events: ToolReceiptsEvents;
  readonly digest: DigestFn;
  readonly leaseMs: number;
  readonly waitJitterMs: number;
  readonly maxWaitMs: number;
  readonly onAmbiguous: 'fail' | 'report';
  readonly owner: string;
  /** Told each call's milestones (telemetry); {@link NOOP_OBSERVER} by default. */
  readonly observer: ToolCallObserver;
  /** Whether a tool runs without a receipt: read-only, and not made destructive by the deployment. */
  runsWithoutReceipt(tool: AnyToolDefinition): boolean;
  /** Validates (and where provable, repairs) a call's input before anything is claimed. */
  prepare(call: ToolCall, tool: AnyToolDefinition, abort: { readonly signal: AbortSignal }): Promise<PreparedCall>;
  /** Turns a tool's return value into what the model sees (and the receipt stores). */
  shape(value: unknown, call: ToolCall, tool: AnyToolDefinition, data: ToolJobData): Promise<RecordedToolResult>;
}

/** The job a call belongs to. */
export interface JobScope {
  readonly job: Job;
  readonly token: string | undefined;
  readonly data: ToolJobData;
  /** Aborted when BullMQ cancels the job or its lock cannot be renewed. */
  readonly abort: LazyAbort;
  /**
   * Park the job until `serverNowMs + delayMs` on the Redis server's clock
   * (a call waits for a live attempt). Calls running side by side defer it
   * until all of them have ended.
   */
  park(serverNowMs: number, delayMs: number): Promise<void>;
}

/**
 * Emits `name` only when someone listens, building the payload then: with no
 * listener (the usual worker) a call allocates no event objects.
 */
function emitIfListened<K extends keyof ToolReceiptsEventMap>(
  events: ToolReceiptsEvents,
  name: K,
  payload: () => ToolReceiptsEventMap[K][0],
): void {
  if (events.listenerCount(name) === 0) return;
  // The typed emit cannot see that one payload is the whole argument list of every event.
  (events as EventEmitter).emit(name, payload());
}

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
 * Run one tool call at most once: prepare its input, claim its receipt, and
 * act on the decision. Returns the block to hand back to the model, or
 * throws what BullMQ should see (DelayedError to come back later,
 * UnrecoverableError to stop, any other error to retry the job).
 */
export async function runToolCall(rt: CallRuntime, scope: JobScope, call: ToolCall): Promise<ToolResultBlock> {
  const { tenantId, runId } = scope.data;
  const obs = rt.observer.callStarted({ tenantId, runId, tool: call.name, callId: call.id, jobId: scope.job.id });
  try {
    const result = await runObservedCall(rt, scope, call, obs);
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
  options: { readonly afterUnknownOutcome?: boolean } = {},
): Promise<ToolResultBlock> {
  const started = performance.now();
  const { tenantId, runId } = scope.data;
  // The call's child logger is made on first use: with info lines off, a call that goes well never makes one.
  let callLogger: Logger | undefined;
  const log = () =>
    (callLogger ??= rt.logger.child({ tenant: tenantId, run: runId, tool: call.name, callId: call.id, jobId: scope.job.id }));
  let reconciled: string | undefined;
  const logDecision = (decision: string, outcome: ToolCallOutcome | 'waited', attempt?: number, failure?: FailureLog) => {
    if (!rt.logger.isLevelEnabled('info')) return;
    const ms = Math.round(performance.now() - started);
    log().info(failure ? { decision, outcome, attempt, reconciled, ...failure, ms } : { decision, outcome, attempt, reconciled, ms }, 'tool call');
  };

  const tool = rt.tools.get(call.name);
  if (!tool) {
    logDecision('reject', 'rejected');
    return block(call, 'rejected', {
      content: `Unknown tool "${call.name}". Nothing was run. Available tools: ${[...rt.tools.keys()].join(', ')}.`,
      is_error: true,
    });
  }

  const prepared = await rt.prepare(call, tool, scope.abort);
  if (!prepared.ok) {
    let content = prepared.message;
    if (prepared.countsAsRejection) {
      const streak = await rt.breaker.recordRejection(tenantId, runId, tool.name);
      if (streak.removed) content += ` ${REJECTION_REMOVAL_SUFFIX}`;
    }
    logDecision('reject', 'rejected');
    return block(call, 'rejected', { content, is_error: true });
  }

  const key: ToolCallReceiptKey = {
    tenantId,
    runId,
    toolName: tool.name,
    argsHash: await toolCallArgsHash(prepared.rawInput, rt.digest),
  };
  if (rt.runsWithoutReceipt(tool)) {
    obs.decided({ decision: 'direct', attempt: undefined });
    return await runReadOnlyCall(rt, { scope, call, tool, key, args: prepared.args, log, logDecision, obs });
  }
  // A job whose lock was lost or that was cancelled (maybe while its input was repaired) claims nothing more.
  throwIfInterrupted(scope.job.id ?? '', scope.abort);
  // One command: the claim script also reads the tool's breaker state in the run. An expired
  // opaque attempt of a tool that can settle it (keyed, or with a reconcile) is settled here.
  const claim = await obs.roundTrip('claim', () => claimCall({ rt, scope, call, tool, key, args: prepared.args, log })).catch((error: unknown) => {
    // A corrupt receipt stays corrupt: retrying the job cannot help, and nothing was written.
    if (error instanceof CorruptReceiptError) {
      log().error({ receiptKey: error.redisKey, why: error.why }, 'receipt is corrupt; call not run');
      throw unrecoverable(error);
    }
    throw error;
  });
  reconciled = claim.reconciled;
  const decision: ReceiptDecision = claim.decision;
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
      const remaining = claim.leaseRemainingMs ?? rt.leaseMs;
      const delay = Math.min(remaining, rt.maxWaitMs) + Math.floor(Math.random() * rt.waitJitterMs);
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
      return await execute({ rt, scope, call, tool, key, args: prepared.args, fence: claim.fence, attempt: claim.fence.attempt, base, log, logDecision, obs,
        afterUnknownOutcome: options.afterUnknownOutcome ?? false,
      });
    }
  }
}

/** One execution's fixed facts, passed along instead of a long parameter list. */
interface Execution {
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
  const recordedSteps = attempt > 1 && tool.effect === 'resumable' ? await rt.store.steps(key) : {};
  const ctx = createToolContext({
    receipt: { store: rt.store, fence }, attempt, key, abort, tenantId, runId, sessionId: scope.data.sessionId,
    callId: call.id, job: scope.job, logger: log, recordedSteps, onFencedOut: onFencedOut('step'),
  });
  const keeper = new LeaseKeeper(rt.store, key, fence, rt.leaseMs, log, onFencedOut('heartbeat')).start();

  let value: unknown;
  try {
    value = await x.obs.runTool(async () => tool.execute(x.args, ctx));
  } catch (error) {
    keeper.stop(); // before any await below: an abandoned lease must not be extended meanwhile
    if (fencedDuring) throw fencedOutFailure(x, fencedDuring, error);
    if (scope.abort.aborted && !(error instanceof NeverStartedError)) {
      // Aborted from outside: first learn whether another attempt already took the call over.
      const takenOver = await takeoverOf(x);
      if (takenOver) {
        onFencedOut('abort')(takenOver);
        throw fencedOutFailure(x, 'abort', error);
      }
      throw abandoned(x, scope.abort.reason, error);
    }
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
    // Also ends the tool's rejection streak in the run, in the same script.
    settled = await x.obs.roundTrip('complete', () => rt.store.complete(key, fence, result));
  } catch (error) {
    if (!(error instanceof FencedOutError)) throw error;
    onFencedOut('complete')(error);
    throw fencedOutFailure(x, 'complete', error);
  }
  reportLateSettle(x, settled, 'executed');
  emitIfListened(rt.events, 'settled', () => ({ ...x.base, attempt, outcome: 'executed' }));
  x.obs.settled('executed');
  x.logDecision('execute', 'executed', attempt);
  return block(call, 'executed', result);
}

/**
 * A settle that came after a claim had already reported the attempt
 * ambiguous: the store recorded it on the receipt; tell the operator too.
 */
function reportLateSettle(x: Execution, settled: SettleResult, outcome: 'executed' | 'failed'): void {
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
function fencedOutFailure(x: Execution, during: FencedOutEvent['during'], cause?: unknown): Error {
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
async function takeoverOf(x: Execution): Promise<FencedOutError | undefined> {
  const now = await x.rt.store.inspect(x.key).catch(() => null);
  if (!now || (now.status === 'running' && now.attempts === x.fence.attempt && now.epoch === x.fence.epoch)) return undefined;
  return new FencedOutError(now.redisKey, x.fence, { status: now.status, attempts: now.attempts, epoch: now.epoch }, 'abort');
}

/**
 * A tool that failed after its job was cancelled or lost its BullMQ lock may
 * have been cut off mid-effect, so its failure proves nothing. The receipt is
 * left running and its lease lapses: a resumable call is then taken over, an
 * opaque one becomes ambiguous. Only a tool that throws `NeverStartedError`
 * is settled as failed.
 */
function abandoned(x: Execution, reason: unknown, cause: unknown): Error {
  x.log().warn({ attempt: x.attempt, reason: errorText(reason) }, 'attempt aborted; receipt left for its lease to lapse');
  x.obs.aborted(reason);
  return new ToolCallFailedError(
    x.tool.name,
    x.call.id,
    'neutral',
    `attempt ${x.attempt} of tool call ${x.call.id} was aborted (${errorText(reason)}); its outcome is unknown, so the receipt was left to lapse`,
    { cause },
  );
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
async function outcomeUnknown(x: Execution, error: OutcomeUnknownError, onFencedOut: (e: FencedOutError) => void): Promise<ToolResultBlock> {
  const { rt, call, tool, key, attempt } = x;
  try {
    await rt.store.markOutcomeUnknown(key, x.fence, error.message);
  } catch (markError) {
    if (!(markError instanceof FencedOutError)) throw markError;
    onFencedOut(markError);
    throw fencedOutFailure(x, 'fail', markError);
  }
  x.obs.outcomeUnknown(error);
  const opaque = receiptEffectOf(tool) === 'opaque';
  if (opaque && settlesExpired(tool) && !x.afterUnknownOutcome) {
    // The tool can settle this itself: claim again now, and the claim reconciles it (or re-runs a
    // keyed call) in this delivery. Only once: a second unknown outcome is left ambiguous.
    x.log().info({ attempt, error: error.message, tier: 'outcomeUnknown' }, 'tool call outcome unknown; settling it');
    return await runObservedCall(rt, x.scope, call, x.obs, { afterUnknownOutcome: true });
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

/**
 * Record a tool's failure on its receipt and the breaker, then decide what
 * the job does: a destructive failure stops the job; a failure that allows an
 * automatic rerun (nothing ran, or the tool is idempotent) retries the job
 * while it has attempts left; any other failure, and the last attempt, is an
 * error result for the model.
 */
async function settleFailure(x: Execution, error: unknown, onFencedOut: (e: FencedOutError) => void): Promise<ToolResultBlock> {
  const { rt, scope, call, tool, key, attempt } = x;
  const { tenantId, runId } = scope.data;
  const tier = failureTier(failureFactsOf(error), { idempotent: tool.idempotent });
  const message = errorText(error);
  let settled: SettleResult;
  try {
    settled = await x.obs.roundTrip('fail', () => rt.store.fail(key, x.fence, { error: message, tier }));
  } catch (failError) {
    if (!(failError instanceof FencedOutError)) throw failError;
    onFencedOut(failError);
    throw fencedOutFailure(x, 'fail', failError);
  }
  reportLateSettle(x, settled, 'failed');
  const breaker = await rt.breaker.recordFailure(tenantId, runId, tool.name, {
    removeNow: tier === 'destructive',
    reason: `${tool.name} was removed after ${tier === 'destructive' ? 'a destructive failure' : 'repeated failures'}.`,
  });
  rt.events.emit('settled', { ...x.base, attempt, outcome: 'failed' });
  x.obs.settled('failed', { tier, error });
  const refused = error instanceof ToolRefusedError;
  x.logDecision('execute', refused ? 'rejected' : 'failed', attempt, { error: message, tier });
  if (refused) return block(call, 'rejected', { content: message, is_error: true });
  const content = failureContent(tool.name, message, tier);
  const failure = new ToolCallFailedError(tool.name, call.id, tier, content, { cause: error });
  if (tier === 'destructive') throw unrecoverable(failure);
  if (breaker.removed) return block(call, 'failed', { content: `${content} ${REJECTION_REMOVAL_SUFFIX}`, is_error: true });
  if (retriesJob(scope.job, tier, error)) throw failure;
  return block(call, 'failed', { content, is_error: true });
}
