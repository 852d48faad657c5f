/**
 * How a worker's turn at a call ends, and the checks made at that moment:
 * what the job becomes, what the model is told (a ghost fact the invariants
 * read), and whether a park or a refusal has something that justifies it.
 */
import type { ModelContext } from './hooks.js';
import { ghostOf, idleWorker, type Ending, type ProtocolState, type Worker } from './state.js';

/** What holds a call a worker parks its job for: a live attempt, a reconcile under way, a pending approval. */
export type Holder = 'lease' | 'reconcile' | 'approval';

/** Whether `holder` really holds the call now: a park with nothing holding it could wait forever. */
function holds(s: ProtocolState, call: number, holder: Holder): boolean {
  const r = s.receipts[call]!;
  switch (holder) {
    case 'lease':
      return r.status === 'running' && r.lease > 0 && !r.ambiguous;
    case 'reconcile':
      return r.reconcileLease > 0;
    case 'approval':
      return r.status === 'awaiting' && r.approvalLeft > 0;
  }
}

/**
 * The worker is done with its turn: the job completes (or fails for good),
 * or goes back to waiting; a worker whose job lock was lost while it was
 * stopped changes neither the job nor what the model is told.
 */
export function finish(s: ProtocolState, wi: number, ending: Ending): string | undefined {
  const w = s.workers[wi]!;
  let violation: string | undefined;
  if (!w.lockLost) {
    s.jobs[w.call] = ending === 'wait' || ending === 'retry' ? 'waiting' : 'done';
    if (ending === 'notRun') {
      ghostOf(s, w.call, w.epoch).toldNotRun = true;
      // "Nothing ran" is said only when the database proves it: no row of the lifetime, committed or still open.
      const row = s.rows[w.call]!.find((r) => r.epoch === w.epoch);
      if (row !== undefined) violation = `call ${w.call}: the model was told nothing ran while its outcome row was ${row.state}`;
    }
  }
  s.workers[wi] = { ...idleWorker(), stopped: w.stopped };
  return violation;
}

/** Parks the job because `holder` holds the call; a violation when nothing does. */
export function park(s: ProtocolState, ctx: ModelContext, wi: number, holder: Holder): string | undefined {
  const call = s.workers[wi]!.call;
  const justified = holds(s, call, holder);
  endWith(s, ctx, wi, 'wait');
  return justified ? undefined : `call ${call} was parked for its ${holder}, but nothing holds it: it could wait forever`;
}

/**
 * Ends the turn, first settling a reservation this delivery did not bind
 * (pc `settleShare`: it may be another delivery's too, so it is kept when
 * an attempt of the receipt needs it, else given back), then {@link finish}.
 */
export function endWith(s: ProtocolState, _ctx: ModelContext, wi: number, ending: Ending): string | undefined {
  const w = s.workers[wi]!;
  if (w.reservation !== 0 && !w.shareBound) {
    w.ending = ending;
    w.pc = 'settleShare';
    return undefined;
  }
  return finish(s, wi, ending);
}

/** Whether what is used and what other calls hold pending fill the limit: else a refusal is the call's own share refusing it. */
export function othersFillLimit(s: ProtocolState, ctx: ModelContext, call: number): boolean {
  const others = s.limit.reservations.filter((r) => r.call !== call && r.state === 'pending').length;
  return s.limit.used + others + 1 > ctx.scenario.limitMax;
}

/** Ends the turn refused by the limit; a violation when the refusal came from the call's own reservation. */
export function refuse(s: ProtocolState, ctx: ModelContext, wi: number): string | undefined {
  const w = s.workers[wi]!;
  const own = w.refusedByOwn;
  const call = w.call;
  endWith(s, ctx, wi, 'refused');
  return own ? `call ${call} was refused by the limit although only its own reservation filled it` : undefined;
}

/** The worker `wi` of `s`. */
export const workerOf = (s: ProtocolState, wi: number): Worker => s.workers[wi]!;
