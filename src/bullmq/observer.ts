/**
 * The wrapper's telemetry hook: a narrow interface `runToolCall` reports each
 * call's milestones to. The default observes nothing and costs nothing; the
 * OpenTelemetry implementation lives in the `otel` entry point, so this layer
 * never loads `@opentelemetry/api`.
 */
import type { ReceiptDecision } from '../core/decision.js';
import type { RedisConnection } from '../redis/connection/connection.js';
import type { ReconcileVerdict } from '../redis/receipts/reads/record.js';
import type { WorkerLimits } from '../limits/call-limits.js';
import type { ReceiptStore } from '../redis/receipts/store.js';
import type { FencedOutEvent } from './events.js';
import type { ToolResultBlock } from './job-data.js';

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

/** One call's observation; every method is called at most once except where noted. */
export interface CallObservation {
  /**
   * A call of a tool with an approval rule met its gate: `requested`
   * (awaiting a person now), `approved` (its claim follows), `denied` or
   * `expired` (it never runs). Optional, so observers written before
   * approvals still compile.
   */
  approval?(state: 'requested' | 'approved' | 'denied' | 'expired'): void;
  /** The claim's decision (not called for calls refused before a claim). */
  decided(decision: ObservedDecision): void;
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
  /** Another attempt took the receipt over; noticed during this write. */
  fencedOut(during: FencedOutEvent['during']): void;
  /** The job was cancelled or lost its BullMQ lock while the tool ran; the receipt is left to lapse. */
  aborted(reason: unknown): void;
  /**
   * The tool threw `OutcomeUnknownError`: the receipt was left as a crash
   * would leave it (an opaque call is now ambiguous; a resumable one is taken
   * over by the next delivery).
   */
  outcomeUnknown(error: unknown): void;
  /**
   * This attempt's settle came after a claim had reported the call ambiguous:
   * it stands and the receipt records it, but someone was told "ambiguous".
   */
  lateSettle(outcome: 'executed' | 'failed'): void;
  /** This attempt settled the receipt: completed, or failed with the tool's error and its tier. */
  settled(outcome: 'executed' | 'failed', failure?: { readonly tier: string; readonly error: unknown }): void;
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
