/**
 * The worker program from a job's delivery to its claim's decision, one
 * step per script and per step the wrapper takes between scripts: the
 * approval gate (src/bullmq/approval-step.ts), the limit's reserve and the
 * settles it makes on the way (src/limits/call-limits.ts,
 * limit-store.ts), the claim's rounds (src/redis/receipts/transitions/
 * claim.ts), a lost reply's release (lost-claims.ts), and the start of a
 * lapsed transactional attempt's takeover (src/bullmq/settle-expired.ts;
 * the rest is in worker-transaction.ts). Each step returns a violation
 * found on the way, or undefined.
 */
import { approvalGate } from './approval-scripts.js';
import type { ModelContext } from './hooks.js';
import { limitCommit, limitRelease, limitReserve, limitSettle } from './limit-scripts.js';
import {
  APPROVAL_NEEDED,
  CORRUPT,
  claim,
  flagAmbiguous,
  reclaim,
  reconcileBegin,
  releaseLostClaim,
  type Observed,
} from './receipt-scripts.js';
import { mintId, type ProtocolState } from './state.js';
import { execute } from './worker-attempt.js';
import { endWith, othersFillLimit, park, refuse } from './worker-ending.js';

type Step = (s: ProtocolState, ctx: ModelContext, wi: number, choice: number) => string | undefined;

/** The step after the gate: the reserve for a limited call (unless a gate passed again finds its share held), else the claim. */
function afterGate(s: ProtocolState, ctx: ModelContext, wi: number): undefined {
  const w = s.workers[wi]!;
  w.pc = ctx.scenario.calls[w.call]!.limited && w.reservation === 0 ? 'reserve' : 'claim';
  return undefined;
}

const gate: Step = (s, ctx, wi) => {
  const w = s.workers[wi]!;
  const spec = ctx.scenario.calls[w.call]!;
  const answer = approvalGate(s, ctx, w.call, spec.effect, mintId(s, w.call));
  if (answer.answer === 'await') return park(s, ctx, wi, 'approval');
  if (answer.answer === 'denied') return endWith(s, ctx, wi, 'denied');
  return afterGate(s, ctx, wi);
};

/** The reserve (LimitStore.reserve): at most three rounds, each settling the expired reservations it met. */
const reserve: Step = (s, ctx, wi) => {
  const w = s.workers[wi]!;
  const answer = limitReserve(s, ctx, w.call, ctx.hooks.reusesOwnReservation);
  w.rounds += 1;
  w.reserveAgain = false;
  w.expired = [...answer.expired];
  w.expiredCalls = [...answer.expiredCalls];
  if (answer.granted) w.reservation = answer.id;
  else w.refusedByOwn = !othersFillLimit(s, ctx, w.call);
  return afterSettles(s, ctx, wi);
};

/** The next expired reservation to settle, or what the reserve answers once all are. */
function afterSettles(s: ProtocolState, ctx: ModelContext, wi: number): undefined {
  const w = s.workers[wi]!;
  if (w.expired.length > 0) {
    w.pc = 'settleExpired';
    return undefined;
  }
  if (w.reservation !== 0) w.pc = 'claim';
  else if (w.reserveAgain && w.rounds < 3) w.pc = 'reserve';
  else w.pc = 'boundOn';
  return undefined;
}

const settleExpired: Step = (s, _ctx, wi) => {
  const w = s.workers[wi]!;
  w.settling = w.expired.shift()!;
  w.pc = limitSettle(s, w.settling, w.expiredCalls.shift()!) === 1 ? 'commitExpired' : 'releaseExpired';
  return undefined;
};

const commitExpired: Step = (s, ctx, wi) => {
  limitCommit(s, s.workers[wi]!.settling);
  return afterSettles(s, ctx, wi);
};

const releaseExpired: Step = (s, ctx, wi) => {
  const w = s.workers[wi]!;
  limitRelease(s, w.settling);
  w.reserveAgain = true;
  return afterSettles(s, ctx, wi);
};

/** Refused: one read of the receipt decides whether the call still goes to its claim (to replay, wait, or run counted). */
const boundOn: Step = (s, ctx, wi) => {
  const w = s.workers[wi]!;
  const r = s.receipts[w.call]!;
  if (r.limitHolder !== 0 || r.status === 'completed' || r.status === 'running') {
    w.refused = true;
    w.pc = 'claim';
    return undefined;
  }
  return refuse(s, ctx, wi);
};

/** Choice 1: the claim runs on the server but its reply is lost. */
const claimStep: Step = (s, ctx, wi, choice) => {
  const w = s.workers[wi]!;
  const spec = ctx.scenario.calls[w.call]!;
  w.token = mintId(s, w.call);
  const seen = claim(s, ctx, w.call, spec.effect, w.token, spec.approval && ctx.hooks.claimAsksApproval);
  return answered(s, ctx, wi, seen, choice === 1 ? { attempt: 1, epoch: w.token } : undefined);
};

/**
 * What a claim or a takeover answered: the attempt it started runs, or the
 * claim's rounds decide from what it saw; when the reply was lost (`lost`:
 * the attempt it may have started), that attempt is released instead.
 */
function answered(s: ProtocolState, ctx: ModelContext, wi: number, seen: Observed, lost?: { attempt: number; epoch: number }) {
  const w = s.workers[wi]!;
  if (lost !== undefined) {
    s.budgets.lostReplies -= 1;
    w.attempt = lost.attempt;
    w.epoch = lost.epoch;
    w.pc = 'releaseLost';
    return undefined;
  }
  if (seen.code === 1) return execute(s, ctx, wi, seen.attempts, seen.epoch);
  if (seen.code === APPROVAL_NEEDED) {
    // The receipt the gate answered for is gone: the gate asks about a new lifetime (call-run.ts, ToolCallRun.run).
    w.pc = 'gate';
    return undefined;
  }
  return decide(s, ctx, wi, seen);
}

const releaseLost: Step = (s, ctx, wi) => {
  const w = s.workers[wi]!;
  releaseLostClaim(s, w.call, w.attempt, w.epoch, w.token);
  return endWith(s, ctx, wi, 'retry');
};

/** Choice 1: the takeover runs on the server but its reply is lost. */
const reclaimStep: Step = (s, ctx, wi, choice) => {
  const w = s.workers[wi]!;
  const spec = ctx.scenario.calls[w.call]!;
  w.token = mintId(s, w.call);
  const seen = { status: w.seenStatus, attempts: w.seenAttempts, epoch: w.seenEpoch };
  const won = reclaim(s, ctx, w.call, seen, spec.effect, w.token);
  return answered(s, ctx, wi, won, choice === 1 ? { attempt: seen.attempts + 1, epoch: seen.epoch } : undefined);
};

const flag: Step = (s, ctx, wi) => {
  const w = s.workers[wi]!;
  const seen = flagAmbiguous(s, w.call, w.seenAttempts, w.seenEpoch, ctx.scenario.calls[w.call]!.effect);
  if (seen.code === 1 || seen.code === 2) return endWith(s, ctx, wi, 'ambiguous');
  return decide(s, ctx, wi, seen);
};

const reconcileBeginStep: Step = (s, ctx, wi) => {
  const w = s.workers[wi]!;
  const begun = reconcileBegin(s, ctx, w.call, w.attempt, w.epoch);
  if (begun.code === CORRUPT) return endWith(s, ctx, wi, 'corrupt');
  if (begun.code === 2) return park(s, ctx, wi, 'reconcile');
  if (begun.code === 0) {
    w.pc = 'claim';
    return undefined;
  }
  w.reconciles = begun.reconciles;
  w.pc = ctx.hooks.takeover === 'lifetime-lock' ? 'sweepLifetime' : 'readOutcome';
  return undefined;
};

/**
 * What the claim's rounds decide from an observation of an existing receipt
 * (runClaim and core/decision.ts): replay, take over, wait for a live
 * attempt, or the ambiguous path (a transactional call's takeover from its
 * outcome row, else the flag).
 */
export function decide(s: ProtocolState, ctx: ModelContext, wi: number, seen: Observed): string | undefined {
  const w = s.workers[wi]!;
  const spec = ctx.scenario.calls[w.call]!;
  if (seen.code === CORRUPT) return endWith(s, ctx, wi, 'corrupt');
  w.seenStatus = seen.status;
  w.seenAttempts = seen.attempts;
  w.seenEpoch = seen.epoch;
  switch (seen.status) {
    case 'absent':
      w.pc = 'claim';
      return undefined;
    case 'completed':
      w.carried = seen.result;
      return endWith(s, ctx, wi, 'done');
    case 'failed':
      w.pc = 'reclaim';
      return undefined;
    default:
      break;
  }
  if (!seen.ambiguous && !seen.expired) return park(s, ctx, wi, 'lease');
  if (!seen.ambiguous && ctx.hooks.mayTakeOver(seen.effect, spec.effect)) {
    w.pc = 'reclaim';
    return undefined;
  }
  if (spec.effect === 'transactional') {
    w.attempt = seen.attempts;
    w.epoch = seen.epoch;
    w.pc = 'reconcileBegin';
    return undefined;
  }
  w.pc = 'flag';
  return undefined;
}

/** The claim side's steps, by the pc that takes them. */
export const CLAIM_STEPS = {
  gate,
  reserve,
  settleExpired,
  commitExpired,
  releaseExpired,
  boundOn,
  claim: claimStep,
  releaseLost,
  reclaim: reclaimStep,
  flag,
  reconcileBegin: reconcileBeginStep,
} as const;
