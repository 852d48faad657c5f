/**
 * The few places where the protocol's fixes of issue 41 live, or where a
 * seeded defect (defects.ts) breaks the model: each a function the worker
 * program calls instead of the transition itself, so a broken model is the
 * right one with one entry replaced.
 */
import { decideApproval, type DecisionAnswer } from './approval-scripts.js';
import { committedAttempt, dropOpenRow, rowHeldOpen } from './outcome-rows.js';
import { complete, reclaim, type Observed, type ScriptContext } from './receipt-scripts.js';
import { resultOf, type Effect, type ProtocolState, type ReceiptStatus, type Scenario } from './state.js';

export interface ProtocolHooks {
  readonly complete: (s: ProtocolState, call: number, attempt: number, epoch: number, result: number) => Observed;
  readonly reclaim: (
    s: ProtocolState,
    ctx: ScriptContext,
    call: number,
    seen: { status: ReceiptStatus; attempts: number; epoch: number },
    requested: Effect,
    token: number,
  ) => Observed;
  readonly decideApproval: (s: ProtocolState, call: number, epoch: number, approve: boolean) => DecisionAnswer;
  /**
   * A takeover's read of the outcome row of a lapsed transactional
   * attempt's lifetime: the committed result, or -1 when nothing committed.
   */
  readonly readOutcome: (s: ProtocolState, call: number, epoch: number) => number;
  /** What the wrapper makes of an insert that waited past `lock_timeout`: an infrastructure retry, or a tool that never started. */
  readonly contended: 'infrastructure' | 'neverStarted';
  /**
   * The lifetime a call's reservation is made under: a redelivery that names
   * the same lifetime finds its own reservation (`fresh`: a new one always).
   */
  readonly reservationLifetime: (s: ProtocolState, call: number) => number | 'fresh';
}

/**
 * The takeover of issue 41: a transaction still holding the lifetime's row
 * is ended first (its backend terminated, found by pid and transaction id),
 * then the verdict is read from what committed.
 */
export function readOutcomeEndingStalled(s: ProtocolState, call: number, epoch: number): number {
  if (rowHeldOpen(s, call, epoch)) {
    for (const w of s.workers) if (w.call === call && w.epoch === epoch && w.txn === 'inserted') w.txn = 'dead';
    dropOpenRow(s, call, epoch);
  }
  const attempt = committedAttempt(s, call, epoch);
  return attempt === 0 ? -1 : resultOf(attempt);
}

/** The protocol as issue 41 fixes it. */
export const PROTOCOL_HOOKS: ProtocolHooks = {
  complete,
  reclaim,
  decideApproval,
  readOutcome: readOutcomeEndingStalled,
  contended: 'infrastructure',
  reservationLifetime: (s, call) => s.receipts[call]!.epoch,
};

/** Everything a transition needs besides the state. */
export interface ModelContext extends ScriptContext {
  readonly scenario: Scenario;
  readonly hooks: ProtocolHooks;
}
