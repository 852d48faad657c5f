/**
 * The few places where the protocol's fixes (of issue 41, and of the
 * checker's findings) live, or where a seeded defect (defects.ts) breaks
 * the model: each a function or switch the worker program reads instead of
 * the transition itself, so a broken model is the right one with one entry
 * replaced.
 */
import { decideApproval, type DecisionAnswer } from './approval-scripts.js';
import { complete, type Observed, type ScriptContext } from './receipt-scripts.js';
import type { Effect, ProtocolState, Scenario } from './state.js';

export interface ProtocolHooks {
  readonly complete: (s: ProtocolState, call: number, attempt: number, epoch: number, result: number) => Observed;
  /**
   * Whether a lapsed attempt may be taken over: the one rule both the claim's
   * decision (core/decision.ts, effectForClaim) and reclaim-3.lua
   * (effectIsOpaque) apply, so the model keeps it in one place.
   */
  readonly mayTakeOver: (recorded: Effect, requested: Effect) => boolean;
  readonly decideApproval: (s: ProtocolState, call: number, epoch: number, approve: boolean) => DecisionAnswer;
  /**
   * How a takeover settles a lapsed transactional attempt: `lifetime-lock`
   * (issue 41): attempts hold the lifetime's lock shared and confirm their
   * fence before their row; the takeover ends the sessions holding it, takes
   * it exclusively, reads what committed and records its verdict under it; a
   * contended insert is an unknown outcome settled from the row.
   * `committed-rows-only` (before): the takeover reads committed rows, no
   * lock, no confirm, and a contended insert counts as never started.
   */
  readonly takeover: 'lifetime-lock' | 'committed-rows-only';
  /** A reserve grants the receipt's own pending reservation again (issue 41), instead of a new one. */
  readonly reusesOwnReservation: boolean;
  /**
   * The claim of a call that needs approval refuses to create a lifetime
   * (claim-4.lua's ARGV[14], code 3) and the wrapper passes the gate again;
   * false: the claim creates one nobody approved (a fixed finding, findings.ts).
   */
  readonly claimAsksApproval: boolean;
  /**
   * A takeover's verdict is refused when the judged attempt's lease was
   * renewed after the takeover began (reconcile-settle-3.lua's ARGV[11]);
   * false: only a lease live now refuses it (a fixed finding, findings.ts).
   */
  readonly verdictSinceBegun: boolean;
}

/** The protocol as issue 41 fixes it. */
export const PROTOCOL_HOOKS: ProtocolHooks = {
  complete,
  mayTakeOver: (recorded, requested) => recorded === 'resumable' && requested === 'resumable',
  decideApproval,
  takeover: 'lifetime-lock',
  reusesOwnReservation: true,
  claimAsksApproval: true,
  verdictSinceBegun: true,
};

/** Everything a transition needs besides the state. */
export interface ModelContext extends ScriptContext {
  readonly scenario: Scenario;
  readonly hooks: ProtocolHooks;
}
