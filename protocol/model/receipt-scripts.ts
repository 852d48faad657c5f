/**
 * The receipt scripts of lua/ as transitions of the model: each function is
 * one script, atomic as the script is on Redis, and does to the model's
 * receipt what the script does to the hash (only the fields the protocol
 * reads), answering what the script answers. The conformance test runs the
 * real script beside each and compares both.
 */
import { ghostOf, type Effect, type ProtocolState, type Receipt, type ReceiptStatus, type Scenario } from './state.js';

/** What a script's observation reply says (lua/includes/observe-receipt.lua), in the model's terms. */
export interface Observed {
  readonly code: number;
  /** `absent` for no receipt (the script's status ''). */
  readonly status: ReceiptStatus;
  readonly attempts: number;
  /** Running with its lease passed. */
  readonly expired: boolean;
  /** `ambiguous_ms` set. */
  readonly ambiguous: boolean;
  readonly epoch: number;
  /** The stored result when completed, else 0. */
  readonly result: number;
  readonly effect: Effect;
}

/** A receipt a script refuses as corrupt (an approval state meeting a script that does not move it). */
export const CORRUPT = -1;

export function observe(r: Receipt, code: number): Observed {
  return {
    code,
    status: r.status,
    attempts: r.attempts,
    expired: r.status === 'running' && r.lease === 0,
    ambiguous: r.ambiguous,
    epoch: r.epoch,
    result: r.status === 'completed' ? r.result : 0,
    effect: r.effect,
  };
}

/** Statuses the ordinary receipt scripts read; an approval state is corrupt to them (openReceiptHash). */
const ORDINARY = new Set<ReceiptStatus>(['absent', 'running', 'completed', 'failed']);

export const holdsFence = (r: Receipt, attempt: number, epoch: number): boolean =>
  r.status === 'running' && r.attempts === attempt && r.epoch === epoch;
export const isFlagged = (r: Receipt): boolean => r.status === 'running' && r.ambiguous;
/** effectIsOpaque in lua/includes/fenced.lua. */
export const effectIsOpaque = (r: Receipt, requested: Effect): boolean => r.effect !== 'resumable' || requested === 'opaque';
const leaseExpired = (r: Receipt): boolean => r.status === 'running' && r.lease === 0;

/** What the scripts need: the scenario, and the takeover rule (a seeded defect replaces it). */
export interface ScriptContext {
  readonly scenario: Scenario;
  readonly hooks: { readonly mayTakeOver: (recorded: Effect, requested: Effect) => boolean };
}

/**
 * Whether a renewal of `r`'s lease is kept in `renewed`: only a
 * transactional call is reconciled in the model, so only its renewals can
 * refuse a verdict (kept for no other, which would only split states).
 */
const reconciled = (r: Receipt): boolean => r.effect === 'transactional';

/** lua/includes/start-attempt.lua: attempt n + 1 of the same lifetime. */
function startAttempt(r: Receipt, ctx: ScriptContext, token: number): void {
  r.attempts += 1;
  r.status = 'running';
  r.lease = ctx.scenario.ticks.lease;
  r.ambiguous = false;
  r.renewed = false;
  if (token !== 0) r.token = token;
}

/** lua/includes/settle.lua for the attempt's own settle: 2 when a claim had flagged it (late), else 1. */
function settle(s: ProtocolState, call: number, outcome: 'completed' | 'failed', result: number, neverStarted: boolean): number {
  const r = s.receipts[call]!;
  const code = r.ambiguous ? 2 : 1;
  settleVerdict(s, call, outcome, result, neverStarted);
  return code;
}

/** A settle by a verdict (resolve, reconcile): never late, `ambiguous_ms` kept. */
function settleVerdict(s: ProtocolState, call: number, outcome: 'completed' | 'failed', result: number, neverStarted: boolean): void {
  const r = s.receipts[call]!;
  r.status = outcome;
  r.result = outcome === 'completed' ? result : 0;
  r.lease = 0;
  r.neverStarted = outcome === 'failed' && neverStarted;
  if (outcome === 'completed') {
    const ghost = ghostOf(s, call, r.epoch);
    if (ghost.completedWith === 0) ghost.completedWith = result;
  }
}

/** claim-4.lua's code 3: no receipt, and the call needs approval; nothing written, the caller passes the gate again. */
export const APPROVAL_NEEDED = 3;

/**
 * claim-4.lua: create the receipt (a new lifetime under `token`), start an
 * approved one, or observe what is there. An awaiting or denied receipt is
 * refused as corrupt (only the approval scripts move it). A call that
 * `needsApproval` never creates a lifetime: {@link APPROVAL_NEEDED}.
 */
export function claim(s: ProtocolState, ctx: ScriptContext, call: number, effect: Effect, token: number, needsApproval: boolean): Observed {
  const r = s.receipts[call]!;
  if (r.status === 'absent' && needsApproval) return observe(r, APPROVAL_NEEDED);
  if (r.status === 'absent' || r.status === 'approved') {
    if (r.status === 'absent') r.effect = effect;
    else r.approvalEpoch = r.epoch;
    r.status = 'running';
    r.attempts = 1;
    r.epoch = token;
    r.lease = ctx.scenario.ticks.lease;
    r.ambiguous = false;
    r.renewed = false;
    r.result = 0;
    return observe(r, 1);
  }
  if (!ORDINARY.has(r.status)) return observe(r, CORRUPT);
  return observe(r, 0);
}

/** reclaim-3.lua: attempt n + 1, compare-and-set on what the caller saw (the takeover rule: see ProtocolHooks.mayTakeOver). */
export function reclaim(
  s: ProtocolState,
  ctx: ScriptContext,
  call: number,
  seen: { status: ReceiptStatus; attempts: number; epoch: number },
  requested: Effect,
  token: number,
): Observed {
  const r = s.receipts[call]!;
  if (!ORDINARY.has(r.status)) return observe(r, CORRUPT);
  const stillAt = r.status === seen.status && r.attempts === seen.attempts && r.epoch === seen.epoch;
  const wins = stillAt && (r.status === 'failed' || (leaseExpired(r) && !isFlagged(r) && ctx.hooks.mayTakeOver(r.effect, requested)));
  if (!wins) return observe(r, 0);
  startAttempt(r, ctx, token);
  return observe(r, 1);
}

/** flag-ambiguous-3.lua: 1 flagged now, 2 flagged before, 0 the state moved on. */
export function flagAmbiguous(s: ProtocolState, call: number, attempts: number, epoch: number, requested: Effect): Observed {
  const r = s.receipts[call]!;
  if (!ORDINARY.has(r.status)) return observe(r, CORRUPT);
  const ambiguous = isFlagged(r) || (leaseExpired(r) && effectIsOpaque(r, requested));
  if (!holdsFence(r, attempts, epoch) || !ambiguous) return observe(r, 0);
  const code = r.ambiguous ? 2 : 1;
  r.ambiguous = true;
  const ghost = ghostOf(s, call, r.epoch);
  if (ghost.flaggedAttempt === 0) ghost.flaggedAttempt = r.attempts;
  return observe(r, code);
}

/** heartbeat-3.lua: 1 extended, 2 extended but contested (flagged), 0 fenced out. */
export function heartbeat(s: ProtocolState, ctx: ScriptContext, call: number, attempt: number, epoch: number): Observed {
  const r = s.receipts[call]!;
  if (!ORDINARY.has(r.status)) return observe(r, CORRUPT);
  if (!holdsFence(r, attempt, epoch)) return observe(r, 0);
  r.lease = ctx.scenario.ticks.lease;
  r.renewed = reconciled(r);
  return observe(r, isFlagged(r) ? 2 : 1);
}

/** record-step-3.lua: the resumable tool's one step recorded; 0 fenced out. */
export function recordStep(s: ProtocolState, call: number, attempt: number, epoch: number): Observed {
  const r = s.receipts[call]!;
  if (!ORDINARY.has(r.status)) return observe(r, CORRUPT);
  if (!holdsFence(r, attempt, epoch)) return observe(r, 0);
  r.step = true;
  return observe(r, 1);
}

/** complete-4.lua: 1 completed, 2 completed late, 0 fenced out. */
export function complete(s: ProtocolState, call: number, attempt: number, epoch: number, result: number): Observed {
  const r = s.receipts[call]!;
  if (!ORDINARY.has(r.status)) return observe(r, CORRUPT);
  if (!holdsFence(r, attempt, epoch)) return observe(r, 0);
  return observe(r, settle(s, call, 'completed', result, false));
}

/** fail-3.lua: 1 failed, 2 failed late, 0 fenced out. The model's failures are all `neverStarted` or not. */
export function fail(s: ProtocolState, call: number, attempt: number, epoch: number, neverStarted: boolean): Observed {
  const r = s.receipts[call]!;
  if (!ORDINARY.has(r.status)) return observe(r, CORRUPT);
  if (!holdsFence(r, attempt, epoch)) return observe(r, 0);
  return observe(r, settle(s, call, 'failed', 0, neverStarted));
}

/** outcome-unknown-3.lua: the lease ends now; an opaque receipt is flagged at once. */
export function outcomeUnknown(s: ProtocolState, call: number, attempt: number, epoch: number): Observed {
  const r = s.receipts[call]!;
  if (!ORDINARY.has(r.status)) return observe(r, CORRUPT);
  if (!holdsFence(r, attempt, epoch)) return observe(r, 0);
  r.lease = 0;
  // lease_until_ms = now: later than a reconcile's begin (a step after it, in the model).
  r.renewed = reconciled(r);
  if (r.effect !== 'resumable' && r.effect !== 'transactional') {
    r.ambiguous = true;
    const ghost = ghostOf(s, call, r.epoch);
    if (ghost.flaggedAttempt === 0) ghost.flaggedAttempt = r.attempts;
  }
  return observe(r, 1);
}

/**
 * release-lost-claim-3.lua: settle as failed (never started) the attempt a
 * claim whose reply was lost started: 1 or 2 released, 3 released already,
 * 0 not that claim's. The owner check is left out: the model's tokens are
 * unique, so the token names the claim alone.
 */
export function releaseLostClaim(s: ProtocolState, call: number, attempt: number, epoch: number, token: number): Observed {
  const r = s.receipts[call]!;
  if (!ORDINARY.has(r.status)) return observe(r, CORRUPT);
  const fenced = holdsFence(r, attempt, epoch);
  if (!fenced && r.status !== 'failed') return observe(r, 0);
  const ours = (attempt === 1 && r.epoch === token) || r.token === token;
  if (!fenced) {
    const stillAt = r.status === 'failed' && r.attempts === attempt && r.epoch === epoch;
    return observe(r, ours && r.neverStarted && stillAt ? 3 : 0);
  }
  if (!ours) return observe(r, 0);
  return observe(r, settle(s, call, 'failed', 0, true));
}

/** reconcile-begin-3.lua's answer: 1 begun (`reconciles` is the fence), 2 another holds the lease, 0 moved on. */
export interface Begun {
  readonly code: number;
  readonly reconciles: number;
}

/** reconcile-begin-3.lua (a reconcile never answers unknown in the model: the outcome row always knows). */
export function reconcileBegin(s: ProtocolState, ctx: ScriptContext, call: number, attempt: number, epoch: number): Begun {
  const r = s.receipts[call]!;
  if (!ORDINARY.has(r.status)) return { code: CORRUPT, reconciles: 0 };
  if (!holdsFence(r, attempt, epoch) || r.lease > 0 || r.effect === 'resumable') return { code: 0, reconciles: 0 };
  if (r.reconcileLease > 0) return { code: 2, reconciles: 0 };
  r.reconciles += 1;
  r.reconcileLease = ctx.scenario.ticks.reconcile;
  r.renewed = false;
  return { code: 1, reconciles: r.reconciles };
}

/**
 * reconcile-settle-3.lua with the verdict read from the outcome row:
 * `verdict` is the committed result, or -1 for not started (then attempt
 * n + 1 starts, owned by the reconciler). 1 recorded, 0 fenced out (also
 * when the lease was renewed since the reconcile began and `sinceBegun`:
 * the caller passed its begin's time).
 */
export function reconcileSettle(
  s: ProtocolState,
  ctx: ScriptContext,
  call: number,
  attempt: number,
  epoch: number,
  reconciles: number,
  verdict: number,
  sinceBegun: boolean,
): Observed {
  const r = s.receipts[call]!;
  if (!ORDINARY.has(r.status)) return observe(r, CORRUPT);
  if (!holdsFence(r, attempt, epoch) || r.reconciles !== reconciles || r.lease > 0 || (sinceBegun && r.renewed)) return observe(r, 0);
  r.reconcileLease = 0;
  if (verdict > 0) settleVerdict(s, call, 'completed', verdict, false);
  else startAttempt(r, ctx, 0);
  return observe(r, 1);
}

/**
 * resolve-3.lua, fenced on the attempts and epoch the operator saw: 1
 * resolved, 0 fenced out, 3 not ambiguous, 4 contested (flagged, lease live).
 */
export function resolve(
  s: ProtocolState,
  call: number,
  attempts: number,
  epoch: number,
  outcome: 'completed' | 'failed',
  result: number,
): Observed {
  const r = s.receipts[call]!;
  if (!ORDINARY.has(r.status)) return observe(r, CORRUPT);
  if (!holdsFence(r, attempts, epoch)) return observe(r, 0);
  const expired = leaseExpired(r);
  if (!expired && isFlagged(r)) return observe(r, 4);
  if (!expired || (r.effect === 'resumable' && !isFlagged(r))) return observe(r, 3);
  settleVerdict(s, call, outcome, result, false);
  return observe(r, 1);
}
