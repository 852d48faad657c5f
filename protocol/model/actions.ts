/**
 * Every move the model can make from a state: a worker's step (with each
 * choice its place offers), a heartbeat, a delivery of a waiting job, the
 * faults (a kill, a stop and its resume, a job lock lapsing under a stopped
 * worker, PostgreSQL ending a stopped worker's idle transaction, a receipt
 * expiring), the clock's tick, and the outside actors (the approver opening
 * a form and deciding, an operator resolving). `enabledActions` lists them
 * in a fixed order; `applyAction` makes one on a copy of the state.
 */
import type { ModelContext } from './hooks.js';
import { decideChecked } from './invariants.js';
import { dropOpenRow, endSession, holdsExclusive, idleInTransaction } from './outcome-rows.js';
import { isFlagged, resolve } from './receipt-scripts.js';
import { absentReceipt, cloneState, idleWorker, OPERATOR_RESULT, type ProtocolState } from './state.js';
import { beat, beats, firstStep, stepChoices, stepWorker } from './worker.js';

export type ActionKind =
  | 'step'
  | 'heartbeat'
  | 'deliver'
  | 'kill'
  | 'stop'
  | 'lockLapse'
  | 'resume'
  | 'idleTimeout'
  | 'tick'
  | 'expire'
  | 'approverRead'
  | 'decide'
  | 'resolve';

/** One move: its kind, the worker (or call) it is about, and a choice (a step's choice, the call delivered, approve or deny...). */
export interface Action {
  readonly kind: ActionKind;
  readonly who: number;
  readonly choice: number;
}

/** A call's receipt has something left to expire into: its lease (and any reconcile or approval wait) has passed. */
function mayExpire(s: ProtocolState, call: number): boolean {
  const r = s.receipts[call]!;
  if (r.status === 'absent' || r.reconcileLease > 0) return false;
  if (r.status === 'running') return r.lease === 0;
  if (r.status === 'awaiting') return r.approvalLeft === 0;
  return true;
}

function clockRuns(s: ProtocolState): boolean {
  return (
    s.receipts.some((r) => r.lease > 0 || r.reconcileLease > 0 || r.approvalLeft > 0) || s.limit.reservations.some((r) => r.deadline > 0)
  );
}

/**
 * An operator may resolve the call: it is listed ambiguous (flagged, or an
 * opaque attempt whose lease passed), and its attempt's worker is gone. The
 * operator found out at the provider, so the verdict is the truth; resolving
 * while the worker is only stopped would be a guess its late effect could
 * contradict (see docs/testing.md).
 */
const operatorMayResolve = (s: ProtocolState, call: number): boolean => {
  const r = s.receipts[call]!;
  const listed = isFlagged(r) || (r.status === 'running' && r.lease === 0 && r.effect !== 'resumable');
  return listed && !s.workers.some((w) => w.pc !== 'idle' && w.call === call && w.epoch === r.epoch && w.attempt === r.attempts);
};

/** Every action enabled in `s`, in a fixed order (the order a trace's steps are numbered by). */
export function enabledActions(s: ProtocolState, ctx: ModelContext): Action[] {
  const actions: Action[] = [];
  const b = s.budgets;
  let idleSeen = false;
  s.workers.forEach((w, wi) => {
    const choices = stepChoices(s, ctx, wi);
    for (let choice = 0; choice < 3; choice++) if (choices & (1 << choice)) actions.push({ kind: 'step', who: wi, choice });
    if (beats(s, wi)) actions.push({ kind: 'heartbeat', who: wi, choice: 0 });
    if (w.pc === 'idle' && !w.stopped) {
      // Idle workers are all alike: delivering to the first one stands for every one.
      if (!idleSeen) s.jobs.forEach((job, call) => job === 'waiting' && actions.push({ kind: 'deliver', who: wi, choice: call }));
      idleSeen = true;
      return;
    }
    if (w.pc === 'idle') return;
    if (b.kills > 0) actions.push({ kind: 'kill', who: wi, choice: 0 });
    if (!w.stopped && b.stops > 0) actions.push({ kind: 'stop', who: wi, choice: 0 });
    if (w.stopped && !w.lockLost) actions.push({ kind: 'lockLapse', who: wi, choice: 0 });
    if (w.stopped) actions.push({ kind: 'resume', who: wi, choice: 0 });
    const spared = holdsExclusive(s, w) && ctx.scenario.takeoverSessionsKept === true;
    if (w.stopped && idleInTransaction(s, w) && !spared) actions.push({ kind: 'idleTimeout', who: wi, choice: 0 });
  });
  if (clockRuns(s)) actions.push({ kind: 'tick', who: 0, choice: 0 });
  for (let call = 0; call < s.receipts.length; call++) {
    const r = s.receipts[call]!;
    if (b.expiries > 0 && mayExpire(s, call)) actions.push({ kind: 'expire', who: call, choice: 0 });
    if (r.status === 'awaiting' && s.forms[call] !== r.epoch) actions.push({ kind: 'approverRead', who: call, choice: 0 });
    if (b.decisions > 0 && s.forms[call] !== 0) {
      actions.push({ kind: 'decide', who: call, choice: 1 }, { kind: 'decide', who: call, choice: 0 });
    }
    if (b.resolves > 0 && operatorMayResolve(s, call)) actions.push({ kind: 'resolve', who: call, choice: 0 });
  }
  return actions;
}

function tick(s: ProtocolState): void {
  for (const r of s.receipts) {
    if (r.lease > 0) r.lease -= 1;
    if (r.reconcileLease > 0) r.reconcileLease -= 1;
    if (r.approvalLeft > 0) r.approvalLeft -= 1;
  }
  for (const r of s.limit.reservations) if (r.deadline > 0) r.deadline -= 1;
}

/** What an action did: the next state, and a violation of an invariant checked as the action happened. */
export interface Applied {
  readonly next: ProtocolState;
  readonly violation?: string | undefined;
}

/** Makes `action` on a copy of `s`. */
export function applyAction(s: ProtocolState, ctx: ModelContext, action: Action): Applied {
  const next = cloneState(s);
  const { who, choice } = action;
  const w = next.workers[who];
  switch (action.kind) {
    case 'step':
      return { next, violation: stepWorker(next, ctx, who, choice) };
    case 'heartbeat':
      return { next, violation: beat(next, ctx, who) };
    case 'deliver':
      next.jobs[choice] = 'active';
      next.workers[who] = { ...idleWorker(), call: choice, pc: firstStep(ctx, choice) };
      return { next };
    case 'kill':
      next.budgets.kills -= 1;
      // The process is gone: its connection's open transaction aborts, and its job is delivered again.
      if (w!.txn === 'inserted') dropOpenRow(next, w!.call, w!.epoch);
      if (!w!.lockLost) next.jobs[w!.call] = 'waiting';
      next.workers[who] = idleWorker();
      return { next };
    case 'stop':
      next.budgets.stops -= 1;
      w!.stopped = true;
      return { next };
    case 'lockLapse':
      w!.lockLost = true;
      next.jobs[w!.call] = 'waiting';
      return { next };
    case 'resume':
      w!.stopped = false;
      return { next };
    case 'idleTimeout':
      endSession(next, who);
      return { next };
    case 'tick':
      tick(next);
      return { next };
    case 'expire':
      next.budgets.expiries -= 1;
      next.receipts[who] = absentReceipt();
      return { next };
    case 'approverRead':
      next.forms[who] = next.receipts[who]!.epoch;
      return { next };
    case 'decide':
      next.budgets.decisions -= 1;
      return { next, violation: decideChecked(next, ctx, who, choice === 1) };
    case 'resolve': {
      next.budgets.resolves -= 1;
      const r = next.receipts[who]!;
      const ran = next.ghosts.some((g) => g.call === who && g.epoch === r.epoch && g.executed);
      resolve(next, who, r.attempts, r.epoch, ran ? 'completed' : 'failed', OPERATOR_RESULT);
      return { next };
    }
  }
}
