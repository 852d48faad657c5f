/**
 * One stream of facts about each call: the path reports each fact once, to the
 * call's {@link CallFacts}, which hands it to the log, the events emitter and
 * the user's `telemetry` observer. Over 300 lines: the public observer
 * interface (its TSDoc is most of it), then the fan-out and its two built-in
 * subscribers, so every log line and event of a call is written in one place.
 */
import type { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { ReceiptDecision } from '../../core/decision.js';
import type { RedisConnection } from '../../redis/connection/connection.js';
import type { ReconcileVerdict } from '../../redis/receipts/reads/record.js';
import type { WorkerLimits } from '../../limits/call-limits.js';
import type { ReceiptStore, SettleResult } from '../../redis/receipts/store.js';
import type { CorruptReceiptError } from '../../redis/errors.js';
import type { ApprovalEvent, FencedOutEvent, ToolCallEventBase, ToolReceiptsEventMap, ToolReceiptsEvents } from '../events.js';
import { errorText } from '../tools/failure-text.js';
import type { ToolCallOutcome, ToolResultBlock } from '../../core/job-data.js';

/** What is known of a call when it starts, before anything is claimed. */
export interface ObservedCall {
  readonly tenantId: string;
  readonly runId: string;
  readonly tool: string;
  readonly callId: string;
  readonly jobId: string | undefined;
}

/**
 * The claim's answer, as the wrapper acts on it; `direct` for a read-only
 * tool, which runs without a receipt (no claim, no receipt key).
 */
export interface ObservedDecision {
  readonly decision: ReceiptDecision['kind'] | 'direct';
  readonly attempt: number | undefined;
  readonly receiptKey?: string;
  /** Why the call is ambiguous, for an `ambiguous` decision. */
  readonly reason?: string;
  /** Set when this claim settled a lost attempt through the tool's `reconcile`: its verdict. */
  readonly reconciled?: ReconcileVerdict;
  /** Set when this claim re-ran a provider-keyed call inside its key window. */
  readonly keyedRerun?: true;
}

/**
 * How a call ended: the block handed back to the model, or the error thrown
 * to BullMQ (a `DelayedError` after {@link CallObservation.waiting}, an
 * `UnrecoverableError`, or a retryable one).
 */
export interface ObservedEnd {
  readonly result?: ToolResultBlock;
  readonly error?: unknown;
}

/** The receipt round trips a call makes, as {@link CallObservation.roundTrip} names them. */
export type ReceiptRoundTrip = 'claim' | 'claimGroup' | 'complete' | 'completeAndClaim' | 'fail';

/** What a failed call's answer adds: the error's text and its tier. */
export interface ObservedFailure {
  readonly error: string;
  readonly tier: string;
}

/**
 * One call's observation; every method is called at most once except where
 * noted. The optional ones are facts the wrapper's own log and events read;
 * an observer may leave them out. Trailing parameters an observer does not
 * declare are facts it may ignore.
 */
export interface CallObservation {
  /**
   * A call of a tool with an approval rule met its gate: `requested`
   * (awaiting a person now), `approved` (its claim follows), `denied` or
   * `expired` (it never runs). Optional, so observers written before
   * approvals still compile. `actor` says who decided; `receiptKey` is the
   * call's receipt.
   */
  approval?(state: 'requested' | 'approved' | 'denied' | 'expired', actor?: string, receiptKey?: string): void;
  /**
   * The claim answered, before its decision is acted on (so also for a
   * claim that ends the call, such as a removed tool's); `reconciled` is set
   * when it settled a lost attempt through the tool's `reconcile`. Called
   * again when the call is claimed again in the same delivery.
   */
  claimed?(reconciled: ReconcileVerdict | undefined): void;
  /** The claim's decision (not called for calls refused before a claim). */
  decided(decision: ObservedDecision): void;
  /**
   * How the call was answered, once it is: the way it went (`reject`,
   * `direct`, `replay`, `wait`, `execute`, `denied`), its outcome, the
   * attempt, and for a failure its error and tier. The wrapper's
   * `tool call` log line.
   */
  answered?(decision: string, outcome: ToolCallOutcome | 'waited', attempt?: number, failure?: ObservedFailure): void;
  /** Runs the tool itself, so an observer can time it and make its own context current. */
  runTool<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Runs one receipt round trip (the claim, with any reconcile it makes, or
   * the complete / fail settle), so an observer can time it; most do not.
   * `completeAndClaim` is a complete that also claims the next call of the
   * turn in the same script; that call then makes no `claim` round trip of
   * its own unless its decision needs more commands (a takeover, or an
   * ambiguous attempt to flag or settle). `claimGroup` claims every call of
   * a side-by-side group at once; it is the round trip of the call that sent
   * it, and the group's other calls make none of their own unless their
   * decision needs more commands.
   */
  roundTrip<T>(name: ReceiptRoundTrip, fn: () => Promise<T>): Promise<T>;
  /** The job is delayed this long for a live attempt. */
  waiting(delayMs: number): void;
  /** Another attempt took the receipt over; noticed during this write (of `attempt`; `observed` is what the receipt held). */
  fencedOut(during: FencedOutEvent['during'], attempt?: number, observed?: unknown): void;
  /**
   * The job was cancelled or lost its BullMQ lock while the tool ran; the
   * receipt is left to lapse. `cause` is what the tool threw.
   */
  aborted(reason: unknown, attempt?: number, cause?: unknown): void;
  /**
   * The tool threw `OutcomeUnknownError`: the receipt was left as a crash
   * would leave it (an opaque call is now ambiguous; a resumable one is taken
   * over by the next delivery).
   */
  outcomeUnknown(error: unknown): void;
  /** After {@link CallObservation.outcomeUnknown}: the tool can settle it, so the call is claimed again at once. */
  settlingUnknown?(attempt: number, error: string): void;
  /** The call's outcome cannot be known; it is not run again (`reason` says why). */
  ambiguous?(reason: string): void;
  /**
   * This attempt's settle came after a claim had reported the call ambiguous:
   * it stands and the receipt records it, but someone was told "ambiguous".
   * `late` holds when that was and when this settled (server clock).
   */
  lateSettle(outcome: 'executed' | 'failed', attempt?: number, late?: { readonly ambiguousMs: number; readonly settledMs: number }): void;
  /**
   * This attempt settled the receipt: completed, or failed with the tool's
   * error and its tier. A read-only call, which has no receipt, reports a
   * failure here too, with no `attempt`.
   */
  settled(outcome: 'executed' | 'failed', failure?: { readonly tier: string; readonly error: unknown }, attempt?: number): void;
  /** The claim met a receipt it cannot read; nothing was run or written. */
  corrupt?(error: CorruptReceiptError): void;
  /** A receipt write of the running attempt went unanswered or unacknowledged: infrastructure, not the tool's failure. */
  cutOff?(attempt: number, cause: unknown): void;
  /** A heartbeat found the attempt already reported ambiguous; it goes on. Called once. */
  contested?(attempt: number): void;
  /** A heartbeat failed (not fenced out); the next one tries again. Called for each. */
  heartbeatFailed?(attempt: number, error: unknown): void;
  /** The claim ran a provider-keyed call again, as `attempt`, with the same key inside its window. */
  keyedRerun?(receiptKey: string, attempt: number, keyWindowMs: number | undefined): void;
  /** The tool's `reconcile` (or a transactional call's outcome row) judged lost `attempt`, taking `ms`. */
  reconciled?(receiptKey: string, attempt: number, verdict: ReconcileVerdict, note: string | undefined, ms: number): void;
  /** The verdict on lost `attempt` could not be written: the receipt moved on meanwhile. */
  reconcileFencedOut?(attempt: number, verdict: ReconcileVerdict): void;
  /** The job could not be noted on the ambiguous receipt (for a retry by hand once it is settled). */
  jobNotNoted?(error: unknown): void;
  /** A limit's cost function could not count the call (it threw, or gave no count): the call is rejected. */
  limitCostNotCounted?(limit: string, error: string): void;
  /** A limit did not let the call run now: it is refused, or the job waits until `retryAtMs` (server clock). */
  overLimit?(limit: string, onLimit: string, retryAtMs: number): void;
  /** The pending approvals index or the audit log could not be updated; the gate's answer stands. */
  approvalIndexNotUpdated?(error: unknown): void;
  /** The job's note for the agent's client (awaiting approval, or no longer) could not be written. */
  approvalNotNoted?(error: unknown): void;
  /** The call is over; called exactly once. */
  ended(end: ObservedEnd): void;
}

/** The wrapper's collaborators an observer may need (a gauge that reads receipts, for one). */
export interface ObserverBinding {
  readonly redis: RedisConnection;
  readonly store: ReceiptStore;
  /** The wrapper's limits, when it has any. */
  readonly limits?: WorkerLimits;
}

/**
 * Receives every tool call's milestones. Pass one as `telemetry` to
 * `withToolReceipts`; `toolReceiptsOtel()` from `bullmq-tool-receipts/otel`
 * is the OpenTelemetry one. Observer errors must not escape: the wrapper
 * does not guard against them.
 */
export interface ToolCallObserver {
  /** Called once by `withToolReceipts` with the stores it built. */
  bind?(binding: ObserverBinding): void;
  /** Called when a call starts; returns what observes it. */
  callStarted(call: ObservedCall): CallObservation;
}

const NOOP_OBSERVATION: CallObservation = {
  decided() {},
  runTool: (fn) => fn(),
  roundTrip: (_name, fn) => fn(),
  waiting() {},
  fencedOut() {},
  aborted() {},
  outcomeUnknown() {},
  lateSettle() {},
  settled() {},
  ended() {},
};

/** Observes nothing: the wrapper's default. */
export const NOOP_OBSERVER: ToolCallObserver = { callStarted: () => NOOP_OBSERVATION };

/**
 * The fan-out, made once per processor: each call's facts go to the log, the
 * events emitter and the user's `telemetry` observer, in that order of
 * subscribers per fact (events, telemetry, log).
 */
export class CallFactsSource {
  readonly log: CallLog;
  readonly events: CallEvents;

  constructor(
    logger: Logger,
    events: ToolReceiptsEvents,
    readonly telemetry: ToolCallObserver,
  ) {
    this.log = new CallLog(logger);
    this.events = new CallEvents(events);
  }

  /** The facts of a call that starts now. */
  start(call: ObservedCall): CallFacts {
    return new CallFacts(this, call);
  }
}

/**
 * One call's facts: what the path reports to, once per fact. It keeps what
 * later facts need of earlier ones (the receipt key, the attempt, a
 * reconcile's verdict, the start time) so the path does not carry them.
 */
export class CallFacts implements Required<CallObservation> {
  /** When the call started (or was claimed again after an unknown outcome), for its log line's `ms`. */
  startedAt = performance.now();
  /** The call's receipt, once a claim decided (read-only calls never have one). */
  receiptKey: string | undefined;
  /** The verdict of a reconcile the last claim made, for the call's log line. */
  reconciledBy: ReconcileVerdict | undefined;
  readonly #source: CallFactsSource;
  readonly #telemetry: CallObservation;
  #logger: Logger | undefined;

  constructor(
    source: CallFactsSource,
    readonly call: ObservedCall,
  ) {
    this.#source = source;
    this.#telemetry = source.telemetry.callStarted(call);
  }

  /** The call's logger, a child made on first use: with info lines off, a call that goes well never makes one. */
  logger(): Logger {
    const { tenantId, runId, tool, callId, jobId } = this.call;
    return (this.#logger ??= this.#source.log.logger.child({ tenant: tenantId, run: runId, tool, callId, jobId }));
  }

  approval(state: 'requested' | 'approved' | 'denied' | 'expired', actor?: string, receiptKey?: string): void {
    this.#telemetry.approval?.(state);
    this.#source.events.approval(this, state, actor, receiptKey);
  }

  claimed(reconciled: ReconcileVerdict | undefined): void {
    this.reconciledBy = reconciled;
    this.#telemetry.claimed?.(reconciled);
  }

  decided(decision: ObservedDecision): void {
    this.receiptKey = decision.receiptKey;
    this.#source.events.decided(this, decision);
    this.#telemetry.decided(decision);
  }

  answered(decision: string, outcome: ToolCallOutcome | 'waited', attempt?: number, failure?: ObservedFailure): void {
    this.#telemetry.answered?.(decision, outcome, attempt, failure);
    this.#source.log.answered(this, decision, outcome, attempt, failure);
  }

  runTool<T>(fn: () => Promise<T>): Promise<T> {
    return this.#telemetry.runTool(fn);
  }

  roundTrip<T>(name: ReceiptRoundTrip, fn: () => Promise<T>): Promise<T> {
    return this.#telemetry.roundTrip(name, fn);
  }

  waiting(delayMs: number): void {
    this.#telemetry.waiting(delayMs);
  }

  fencedOut(during: FencedOutEvent['during'], attempt: number, observed?: unknown): void {
    this.#source.events.fencedOut(this, during, attempt);
    this.#telemetry.fencedOut(during, attempt, observed);
    this.#source.log.fencedOut(this, during, attempt, observed);
  }

  aborted(reason: unknown, attempt: number, cause?: unknown): void {
    this.#source.log.aborted(this, reason, attempt, cause);
    this.#telemetry.aborted(reason, attempt, cause);
  }

  outcomeUnknown(error: unknown): void {
    this.#telemetry.outcomeUnknown(error);
  }

  settlingUnknown(attempt: number, error: string): void {
    this.#telemetry.settlingUnknown?.(attempt, error);
    this.#source.log.settlingUnknown(this, attempt, error);
    // The call is claimed again: its next log line times, and names the reconcile of, that claim.
    this.startedAt = performance.now();
    this.reconciledBy = undefined;
  }

  ambiguous(reason: string): void {
    this.#source.events.ambiguous(this, reason);
    this.#telemetry.ambiguous?.(reason);
    this.#source.log.ambiguous(this, reason);
  }

  /** Reports {@link lateSettle} when `settled` came after a claim had reported the attempt ambiguous. */
  lateSettleOf(settled: SettleResult, outcome: 'executed' | 'failed', attempt: number): void {
    if (settled.late) this.lateSettle(outcome, attempt, { ambiguousMs: settled.late.ambiguousMs, settledMs: settled.settledMs });
  }

  lateSettle(outcome: 'executed' | 'failed', attempt: number, late: { readonly ambiguousMs: number; readonly settledMs: number }): void {
    this.#source.events.lateSettle(this, outcome, attempt, late);
    this.#telemetry.lateSettle(outcome, attempt, late);
    this.#source.log.lateSettle(this, outcome, attempt, late);
  }

  settled(outcome: 'executed' | 'failed', failure?: { readonly tier: string; readonly error: unknown }, attempt?: number): void {
    if (attempt !== undefined) this.#source.events.settled(this, outcome, attempt);
    this.#telemetry.settled(outcome, failure, attempt);
  }

  corrupt(error: CorruptReceiptError): void {
    this.#telemetry.corrupt?.(error);
    this.logger().error({ receiptKey: error.redisKey, why: error.why }, 'receipt is corrupt; call not run');
  }

  cutOff(attempt: number, cause: unknown): void {
    this.#telemetry.cutOff?.(attempt, cause);
    this.logger().warn(
      { attempt, code: (cause as { code?: string }).code, error: errorText(cause) },
      'tool call cut off by Redis; not counted as a tool failure, the job retries',
    );
  }

  contested(attempt: number): void {
    this.#telemetry.contested?.(attempt);
    this.logger().warn({ attempt }, 'a claim already reported this attempt ambiguous; it goes on, and its settle will be recorded as late');
  }

  heartbeatFailed(attempt: number, error: unknown): void {
    this.#telemetry.heartbeatFailed?.(attempt, error);
    this.logger().warn({ err: error, attempt }, 'receipt heartbeat failed; will retry');
  }

  keyedRerun(receiptKey: string, attempt: number, keyWindowMs: number | undefined): void {
    this.#source.events.keyedRerun(this, receiptKey, attempt);
    this.#telemetry.keyedRerun?.(receiptKey, attempt, keyWindowMs);
    this.logger().info({ attempt, keyWindowMs }, 'keyed call run again with the same idempotency key');
  }

  reconciled(receiptKey: string, attempt: number, verdict: ReconcileVerdict, note: string | undefined, ms: number): void {
    this.#source.events.reconciled(this, receiptKey, attempt, verdict, note);
    this.#telemetry.reconciled?.(receiptKey, attempt, verdict, note, ms);
    this.logger().info({ reconciled: verdict, attempt, note, ms }, `tool call reconciled: ${verdict}`);
  }

  reconcileFencedOut(attempt: number, verdict: ReconcileVerdict): void {
    this.#telemetry.reconcileFencedOut?.(attempt, verdict);
    this.logger().warn({ attempt, verdict }, 'reconcile verdict fenced out; the receipt moved on');
  }

  jobNotNoted(error: unknown): void {
    this.#telemetry.jobNotNoted?.(error);
    this.logger().warn({ err: error }, 'could not note the job on the ambiguous receipt; retry it by hand once the call is settled');
  }

  // The next four are the worker's lines, not the call's: written with its logger, naming the call in their fields.

  limitCostNotCounted(limit: string, error: string): void {
    this.#telemetry.limitCostNotCounted?.(limit, error);
    this.#source.log.logger.error({ tool: this.call.tool, callId: this.call.callId, limit, error }, 'limit cost not counted');
  }

  overLimit(limit: string, onLimit: string, retryAtMs: number): void {
    this.#telemetry.overLimit?.(limit, onLimit, retryAtMs);
    const { logger } = this.#source.log;
    // Which limit, for the operator: the call's own line says only that it was rejected or waited.
    if (!logger.isLevelEnabled('info')) return;
    const { tool, callId, jobId } = this.call;
    logger.info({ tool, callId, jobId, limit, onLimit, retryAtMs }, 'tool call over its limit');
  }

  approvalIndexNotUpdated(error: unknown): void {
    this.#telemetry.approvalIndexNotUpdated?.(error);
    this.#source.log.logger.warn(
      { err: error, tool: this.call.tool, callId: this.call.callId },
      'could not update the pending approvals index or audit log',
    );
  }

  approvalNotNoted(error: unknown): void {
    this.#telemetry.approvalNotNoted?.(error);
    this.#source.log.logger.warn({ err: error, callId: this.call.callId }, 'could not note the approval on the job');
  }

  ended(end: ObservedEnd): void {
    this.#telemetry.ended(end);
  }
}

/** The log's subscription to every call's facts: the lines (messages, levels, fields) docs/observability.md lists. */
class CallLog {
  constructor(readonly logger: Logger) {}

  /** A call that failed (or ended ambiguous) is a warning, with its tier; any other answer is an info line. */
  answered(facts: CallFacts, decision: string, outcome: ToolCallOutcome | 'waited', attempt?: number, failure?: ObservedFailure): void {
    const level = failure && outcome !== 'rejected' ? 'warn' : 'info';
    if (!this.logger.isLevelEnabled(level)) return;
    const ms = Math.round(performance.now() - facts.startedAt);
    const reconciled = facts.reconciledBy;
    facts
      .logger()
      [level](
        failure ? { decision, outcome, attempt, reconciled, ...failure, ms } : { decision, outcome, attempt, reconciled, ms },
        'tool call',
      );
  }

  fencedOut(facts: CallFacts, during: FencedOutEvent['during'], attempt: number, observed: unknown): void {
    facts.logger().warn({ attempt, during, observed }, 'attempt fenced out; another attempt owns the call');
  }

  aborted(facts: CallFacts, reason: unknown, attempt: number, cause: unknown): void {
    facts
      .logger()
      .warn({ attempt, reason: errorText(reason), error: errorText(cause) }, 'attempt aborted; receipt left for its lease to lapse');
  }

  settlingUnknown(facts: CallFacts, attempt: number, error: string): void {
    facts.logger().info({ attempt, error, tier: 'outcomeUnknown' }, 'tool call outcome unknown; settling it');
  }

  ambiguous(facts: CallFacts, reason: string): void {
    facts
      .logger()
      .warn(
        { receiptKey: facts.receiptKey, reason, decision: 'ambiguous', outcome: 'ambiguous' },
        'tool call outcome unknown; not repeated',
      );
  }

  lateSettle(facts: CallFacts, outcome: 'executed' | 'failed', attempt: number, late: { ambiguousMs: number; settledMs: number }): void {
    facts
      .logger()
      .warn(
        { attempt, outcome, receiptKey: facts.receiptKey, ambiguousMs: late.ambiguousMs, settledMs: late.settledMs },
        'tool call settled late: a claim had already reported it ambiguous; the receipt records this settle',
      );
  }
}

/**
 * The events emitter's subscription to every call's facts. An event's payload
 * is built only when someone listens: with no listener (the usual worker) a
 * call allocates no event objects.
 */
class CallEvents {
  constructor(readonly emitter: ToolReceiptsEvents) {}

  #emit<K extends keyof ToolReceiptsEventMap>(name: K, payload: () => ToolReceiptsEventMap[K][0]): void {
    if (this.emitter.listenerCount(name) === 0) return;
    // The typed emit cannot see that one payload is the whole argument list of every event.
    (this.emitter as EventEmitter).emit(name, payload());
  }

  /** The identifiers every event carries. */
  #base(facts: CallFacts, receiptKey = facts.receiptKey ?? ''): ToolCallEventBase {
    const { tenantId, runId, tool, callId, jobId } = facts.call;
    return { tenantId, runId, tool, callId, jobId, receiptKey };
  }

  decided(facts: CallFacts, observed: ObservedDecision): void {
    // A read-only call runs without a receipt: no claim, so no decision event.
    if (observed.decision === 'direct') return;
    this.#emit('decision', () => ({
      ...this.#base(facts),
      decision: observed.decision as ReceiptDecision['kind'],
      attempt: observed.attempt,
      ...(observed.reconciled ? { reconciled: observed.reconciled } : {}),
    }));
  }

  approval(facts: CallFacts, state: ApprovalEvent['state'], actor: string | undefined, receiptKey: string | undefined): void {
    this.#emit('approval', () => ({ ...this.#base(facts, receiptKey), state, ...(actor === undefined ? {} : { actor }) }));
  }

  fencedOut(facts: CallFacts, during: FencedOutEvent['during'], attempt: number): void {
    this.#emit('fencedOut', () => ({ ...this.#base(facts), attempt, during }));
  }

  settled(facts: CallFacts, outcome: 'executed' | 'failed', attempt: number): void {
    this.#emit('settled', () => ({ ...this.#base(facts), attempt, outcome }));
  }

  lateSettle(facts: CallFacts, outcome: 'executed' | 'failed', attempt: number, late: { ambiguousMs: number; settledMs: number }): void {
    this.#emit('lateSettle', () => ({ ...this.#base(facts), attempt, outcome, ambiguousMs: late.ambiguousMs, settledMs: late.settledMs }));
  }

  ambiguous(facts: CallFacts, reason: string): void {
    this.#emit('ambiguous', () => ({ ...this.#base(facts), reason }));
  }

  keyedRerun(facts: CallFacts, receiptKey: string, attempt: number): void {
    this.#emit('keyedRerun', () => ({ ...this.#base(facts, receiptKey), attempt }));
  }

  reconciled(facts: CallFacts, receiptKey: string, attempt: number, verdict: ReconcileVerdict, note: string | undefined): void {
    this.#emit('reconciled', () => ({ ...this.#base(facts, receiptKey), attempt, verdict, ...(note ? { note } : {}) }));
  }
}
