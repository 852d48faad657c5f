/**
 * The events a processor emits about each call (decisions, fenced-out writes,
 * reconciles, settles), for logs and hosts.
 */
import { EventEmitter } from 'node:events';
import type { ReceiptDecision } from '../core/decision.js';
import type { ReconcileVerdict } from '../redis/receipts/reads/record.js';
import type { ToolCallOutcome } from '../core/job-data.js';

/** Identifiers every event carries, so a listener can correlate without the job. */
export interface ToolCallEventBase {
  readonly tenantId: string;
  readonly runId: string;
  readonly tool: string;
  readonly callId: string;
  readonly jobId: string | undefined;
  /** The receipt's Redis key, for `redis-cli HGETALL`. */
  readonly receiptKey: string;
}

/**
 * Emitted once per claimed call, with the decision and (for executions) the
 * attempt. Not emitted for a call refused without a claim: an unknown tool,
 * invalid input, or a call that would execute a tool the run's breaker has
 * removed (the claim wrote nothing; the call is answered as rejected). A
 * removed tool's replay, wait or ambiguous decision is emitted as usual.
 */
export interface DecisionEvent extends ToolCallEventBase {
  readonly decision: ReceiptDecision['kind'];
  readonly attempt: number | undefined;
  /** Set when the decision came from a reconcile of an expired attempt, with its verdict. */
  readonly reconciled?: ReconcileVerdict;
}

/** Emitted when a call's effect may or may not have happened. */
export interface AmbiguousEvent extends ToolCallEventBase {
  readonly reason: string;
}

/** Emitted when an attempt learns another attempt has taken its receipt over. */
export interface FencedOutEvent extends ToolCallEventBase {
  readonly attempt: number;
  /** Which write found the fence closed. */
  readonly during: 'heartbeat' | 'step' | 'complete' | 'fail' | 'abort';
}

/** Emitted after a receipt settled (completed or failed) under this attempt. */
export interface SettledEvent extends ToolCallEventBase {
  readonly attempt: number;
  readonly outcome: ToolCallOutcome;
}

/**
 * Emitted when an attempt settled its receipt (completed or failed) after a
 * claim had already reported it ambiguous: a worker that stalled (SIGSTOP, a
 * paused VM) woke and finished. The settle stands and the receipt records it
 * (`late_settle_ms`, `late_settle_attempt`); whoever was told "ambiguous"
 * meanwhile may want to know the outcome after all.
 */
export interface LateSettleEvent extends ToolCallEventBase {
  readonly attempt: number;
  readonly outcome: 'executed' | 'failed';
  /** When a claim first reported the attempt ambiguous (server clock). */
  readonly ambiguousMs: number;
  /** When the attempt settled (server clock). */
  readonly settledMs: number;
}

/**
 * Emitted when a tool's `reconcile` answered about an attempt that lost its
 * lease (a throw or a timeout is recorded as `unknown`, with `note` saying so).
 */
export interface ReconciledEvent extends ToolCallEventBase {
  /** The attempt that was judged. */
  readonly attempt: number;
  readonly verdict: ReconcileVerdict;
  readonly note?: string;
}

/** Emitted when a provider-keyed call is run again, with the same key, inside its window. */
export interface KeyedRerunEvent extends ToolCallEventBase {
  /** The new attempt. */
  readonly attempt: number;
}

/**
 * Emitted when a call that needs approval meets the gate: `requested` when
 * its receipt was created awaiting approval, `approved` when the worker found
 * it approved (the claim then starts it), `denied` / `expired` when it will
 * never run. A job that meets a call still awaiting emits nothing again.
 */
export interface ApprovalEvent extends ToolCallEventBase {
  readonly state: 'requested' | 'approved' | 'denied' | 'expired';
  /** Who decided, for `denied` (and `expiry` for `expired`). */
  readonly actor?: string;
}

/** Event names and payloads of {@link ToolReceiptsEvents}. */
export interface ToolReceiptsEventMap {
  decision: [DecisionEvent];
  ambiguous: [AmbiguousEvent];
  fencedOut: [FencedOutEvent];
  settled: [SettledEvent];
  lateSettle: [LateSettleEvent];
  reconciled: [ReconciledEvent];
  keyedRerun: [KeyedRerunEvent];
  approval: [ApprovalEvent];
}

/** A typed event emitter for the wrapper's lifecycle. Listener errors are the listener's problem. */
export class ToolReceiptsEvents extends EventEmitter<ToolReceiptsEventMap> {}
