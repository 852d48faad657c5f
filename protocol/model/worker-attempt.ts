/**
 * The worker program from an execute decision to the settle: the limit's
 * bind and commit (src/limits/call-limits.ts), the tool run with its
 * effect (opaque: one effect; resumable: one recorded step; transactional:
 * worker-transaction.ts), the complete or the failure settle
 * (src/bullmq/run-call.ts, settle-call.ts) and a never-started attempt's
 * share given back. Fenced writes are checked as they happen: one whose
 * writer does not hold the fence must change nothing.
 */
import type { ModelContext } from './hooks.js';
import { limitBind, limitCommit, limitRelease, limitSettle, limitUnbind } from './limit-scripts.js';
import { CORRUPT, fail, holdsFence, outcomeUnknown, recordStep, type Observed } from './receipt-scripts.js';
import { ghostOf, idleWorker, resultOf, type ProtocolState, type Receipt } from './state.js';
import { endWith, finish, refuse } from './worker-ending.js';

type Step = (s: ProtocolState, ctx: ModelContext, wi: number, choice: number) => string | undefined;

/** A fenced write: runs `write`, and reports a violation when a writer that does not hold the fence changed the receipt. */
export function fencedWrite(s: ProtocolState, wi: number, write: () => Observed): { seen: Observed; violation?: string } {
  const w = s.workers[wi]!;
  const before: Receipt = { ...s.receipts[w.call]! };
  const held = holdsFence(before, w.attempt, w.epoch);
  const seen = write();
  if (held) return { seen };
  const after = s.receipts[w.call]!;
  for (const field of Object.keys(before) as (keyof Receipt)[]) {
    if (before[field] !== after[field]) {
      return { seen, violation: `a fenced-out writer (attempt ${w.attempt}) changed ${field} of call ${w.call}'s receipt` };
    }
  }
  return { seen };
}

/** The call ran its tool in the worker's lifetime: counted once per lifetime (the limit's and the approval's unit). */
export function ranTool(s: ProtocolState, wi: number, effect: boolean): void {
  const w = s.workers[wi]!;
  const ghost = ghostOf(s, w.call, w.epoch);
  if (effect) ghost.effects += 1;
  if (!ghost.executed) {
    ghost.executed = true;
    s.runs[w.call]! += 1;
  }
}

/** The claim decided to execute attempt `attempt` of lifetime `epoch`: the limit's bind first, then the tool. */
export function execute(s: ProtocolState, ctx: ModelContext, wi: number, attempt: number, epoch: number): undefined {
  const w = s.workers[wi]!;
  w.attempt = attempt;
  w.epoch = epoch;
  if (ctx.scenario.calls[w.call]!.limited) {
    w.pc = 'bind';
    return undefined;
  }
  return startTool(s, ctx, wi);
}

function startTool(s: ProtocolState, ctx: ModelContext, wi: number): undefined {
  const w = s.workers[wi]!;
  const effect = ctx.scenario.calls[w.call]!.effect;
  w.pc = effect === 'opaque' ? 'effect' : effect === 'transactional' ? 'txBegin' : w.attempt > 1 ? 'readSteps' : 'stepEffect';
  return undefined;
}

/** LimitedCall.afterClaim for an execution: bind and commit, or give back and run counted already, or not run at all. */
const bind: Step = (s, ctx, wi) => {
  const w = s.workers[wi]!;
  if (w.refused) {
    // The limit refused, and the claim executes: it runs only when this lifetime is counted already.
    if (s.receipts[w.call]!.limitHolder !== 0) return startTool(s, ctx, wi);
    w.ending = 'refused';
    w.pc = 'fail';
    return undefined;
  }
  const code = limitBind(s, w.call, w.reservation);
  if (code === CORRUPT) return endWith(s, ctx, wi, 'corrupt');
  if (code === 1) {
    w.shareBound = true;
    w.pc = 'commitShare';
  } else if (code === 2 && s.receipts[w.call]!.limitHolder === w.reservation) {
    // Counted by this very reservation (an earlier delivery bound it): committed, and not this delivery's to give back.
    w.pc = 'commitHeld';
  } else if (code === 3) {
    // Nothing running: settled on the run's side (another delivery may hold it), and the attempt runs.
    w.pc = 'settleShare';
  } else {
    // Revoked (0): not to run; settled as never started, then reserve again. Counted by another (2): run.
    if (code === 0) w.ending = 'retry';
    w.pc = 'releaseUnused';
  }
  return undefined;
};

const commitShare: Step = (s, ctx, wi) => {
  limitCommit(s, s.workers[wi]!.reservation);
  return startTool(s, ctx, wi);
};

const releaseUnused: Step = (s, ctx, wi) => {
  const w = s.workers[wi]!;
  limitRelease(s, w.reservation);
  w.reservation = 0;
  if (w.ending === 'retry') {
    w.pc = 'fail';
    return undefined;
  }
  return startTool(s, ctx, wi);
};

const readSteps: Step = (s, _ctx, wi) => {
  const w = s.workers[wi]!;
  w.stepKnown = s.receipts[w.call]!.step;
  w.pc = 'stepEffect';
  return undefined;
};

/**
 * The opaque tool: choice 0 its effect and a return, 1 a NeverStartedError
 * (no effect), 2 its effect and an OutcomeUnknownError. Once a heartbeat
 * was fenced out its signal is aborted: 0 the effect anyway (a tool that
 * does not listen), 1 stopped before it; either way nothing is settled.
 */
const effect: Step = (s, _ctx, wi, choice) => {
  const w = s.workers[wi]!;
  if (w.fencedOut) {
    if (choice === 0) ranTool(s, wi, true);
    return finish(s, wi, 'retry');
  }
  if (choice === 1) {
    s.budgets.failures -= 1;
    w.pc = 'fail';
    return undefined;
  }
  ranTool(s, wi, true);
  if (choice === 2) s.budgets.failures -= 1;
  w.pc = choice === 2 ? 'outcomeUnknown' : 'complete';
  return undefined;
};

/** The resumable tool's one step: skipped when this attempt read it recorded; choice 1 a NeverStartedError before it. */
const stepEffect: Step = (s, _ctx, wi, choice) => {
  const w = s.workers[wi]!;
  if (w.stepKnown) {
    w.pc = 'complete';
    return undefined;
  }
  if (choice === 1 && !w.fencedOut) {
    s.budgets.failures -= 1;
    w.pc = 'fail';
    return undefined;
  }
  if (w.fencedOut && choice === 1) return finish(s, wi, 'retry');
  ranTool(s, wi, false);
  w.pc = 'recordStep';
  return undefined;
};

const recordStepStep: Step = (s, _ctx, wi) => {
  const w = s.workers[wi]!;
  const { seen, violation } = fencedWrite(s, wi, () => recordStep(s, w.call, w.attempt, w.epoch));
  if (seen.code !== 1 || w.fencedOut) finish(s, wi, 'retry');
  else w.pc = 'complete';
  return violation;
};

const completeStep: Step = (s, ctx, wi) => {
  const w = s.workers[wi]!;
  const result = w.carried !== 0 ? w.carried : resultOf(w.attempt);
  const { seen, violation } = fencedWrite(s, wi, () => ctx.hooks.complete(s, w.call, w.attempt, w.epoch, result));
  if (seen.code === CORRUPT) endWith(s, ctx, wi, 'corrupt');
  else finish(s, wi, seen.code === 0 ? 'retry' : 'done');
  return violation;
};

/**
 * The failure settle, tier neverStarted (settleFailure): choice 0 the job
 * retries, 1 it was its last attempt and the model is told nothing ran. A
 * bound share is given back first (unbind, then release).
 */
const failStep: Step = (s, ctx, wi, choice) => {
  const w = s.workers[wi]!;
  const { seen, violation } = fencedWrite(s, wi, () => fail(s, w.call, w.attempt, w.epoch, true));
  if (w.ending === 'refused') return refuse(s, ctx, wi) ?? violation;
  if (seen.code === CORRUPT) return endWith(s, ctx, wi, 'corrupt') ?? violation;
  const ending = seen.code !== 0 && choice === 1 ? 'notRun' : 'retry';
  if (seen.code !== 0 && w.shareBound) {
    w.ending = ending;
    w.pc = 'unbindShare';
    return violation;
  }
  const told = finish(s, wi, ending);
  return violation ?? told;
};

/**
 * markOutcomeUnknown (run-call.ts's outcomeUnknown): an opaque call is then
 * ambiguous; a transactional one (a contended insert, a takeover holding its
 * lifetime) is claimed again at once, once, and its claim settles it from
 * the outcome row; a second unknown outcome retries the job.
 */
const outcomeUnknownStep: Step = (s, ctx, wi) => {
  const w = s.workers[wi]!;
  const { seen, violation } = fencedWrite(s, wi, () => outcomeUnknown(s, w.call, w.attempt, w.epoch));
  const spec = ctx.scenario.calls[w.call]!;
  if (seen.code !== 1) finish(s, wi, 'retry');
  else if (spec.effect === 'opaque') finish(s, wi, 'ambiguous');
  else if (w.afterUnknown) finish(s, wi, 'retry');
  else claimAgain(s, ctx, wi);
  return violation;
};

/** The call's path from its start again in this delivery (the gate, the reserve, the claim), after an unknown outcome. */
function claimAgain(s: ProtocolState, ctx: ModelContext, wi: number): void {
  const w = s.workers[wi]!;
  const spec = ctx.scenario.calls[w.call]!;
  s.workers[wi] = {
    ...idleWorker(),
    call: w.call,
    stopped: w.stopped,
    lockLost: w.lockLost,
    afterUnknown: true,
    pc: spec.approval ? 'gate' : spec.limited ? 'reserve' : 'claim',
  };
}

const unbindShare: Step = (s, _ctx, wi) => {
  const w = s.workers[wi]!;
  // Moved on (a later attempt took the call over, counted by this share): not given back.
  if (limitUnbind(s, w.call, w.reservation, w.attempt, w.epoch) === 2) return finish(s, wi, w.ending);
  w.pc = 'giveBackShare';
  return undefined;
};

const giveBackShare: Step = (s, _ctx, wi) => {
  const w = s.workers[wi]!;
  limitRelease(s, w.reservation);
  return finish(s, wi, w.ending);
};

/** LimitStore.settle: limit-settle-2.lua on the run's side, then the commit or the give-back it calls for. */
const settleShare: Step = (s, _ctx, wi) => {
  const w = s.workers[wi]!;
  w.pc = limitSettle(s, w.reservation, w.call) === 1 ? 'commitHeld' : 'releaseShare';
  return undefined;
};

/** After a settle or a share counted already: the turn ends as it was to, or (no ending yet) the tool runs. */
function afterShare(s: ProtocolState, ctx: ModelContext, wi: number): string | undefined {
  const w = s.workers[wi]!;
  w.reservation = 0;
  if (w.ending === 'none') return startTool(s, ctx, wi);
  return finish(s, wi, w.ending);
}

const commitHeld: Step = (s, ctx, wi) => {
  limitCommit(s, s.workers[wi]!.reservation);
  return afterShare(s, ctx, wi);
};

const releaseShare: Step = (s, ctx, wi) => {
  limitRelease(s, s.workers[wi]!.reservation);
  return afterShare(s, ctx, wi);
};

/** The attempt side's steps, by the pc that takes them. */
export const ATTEMPT_STEPS = {
  bind,
  commitShare,
  releaseUnused,
  readSteps,
  effect,
  stepEffect,
  recordStep: recordStepStep,
  complete: completeStep,
  fail: failStep,
  outcomeUnknown: outcomeUnknownStep,
  unbindShare,
  giveBackShare,
  settleShare,
  commitHeld,
  releaseShare,
} as const;
