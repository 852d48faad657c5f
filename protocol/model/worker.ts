/**
 * A worker's next step: which choices its place in the call offers now
 * (`stepChoices`, a bit per choice), and the step itself (`stepWorker`),
 * dispatched to the claim side (worker-claim.ts) or the attempt side
 * (worker-attempt.ts); and the heartbeat its lease keeper sends while the
 * tool runs.
 */
import type { ModelContext } from './hooks.js';
import { heartbeat, holdsFence } from './receipt-scripts.js';
import type { Pc, ProtocolState } from './state.js';
import { ATTEMPT_STEPS, fencedWrite } from './worker-attempt.js';
import { CLAIM_STEPS } from './worker-claim.js';
import { TRANSACTION_STEPS, transactionWaits } from './worker-transaction.js';

type Step = (s: ProtocolState, ctx: ModelContext, wi: number, choice: number) => string | undefined;

const STEPS: Record<Exclude<Pc, 'idle'>, Step> = { ...CLAIM_STEPS, ...ATTEMPT_STEPS, ...TRANSACTION_STEPS };

/** Where the tool is running, so the lease keeper beats. */
const TOOL_RUNNING = new Set<Pc>(['effect', 'stepEffect', 'recordStep', 'txBegin', 'txConfirm', 'txInsert', 'txCommit']);

/** The choices worker `wi` has now, one bit each (0: it cannot step: idle, stopped, or waiting on a lock). */
export function stepChoices(s: ProtocolState, ctx: ModelContext, wi: number): number {
  const w = s.workers[wi]!;
  if (w.pc === 'idle' || w.stopped) return 0;
  const b = s.budgets;
  switch (w.pc) {
    case 'claim':
    case 'reclaim':
      return b.lostReplies > 0 ? 0b11 : 0b1;
    case 'effect':
      if (w.fencedOut) return 0b11;
      return b.failures > 0 ? 0b111 : 0b1;
    case 'stepEffect':
      if (w.stepKnown) return 0b1;
      if (w.fencedOut) return 0b11;
      return b.failures > 0 ? 0b11 : 0b1;
    case 'txInsert':
      if (w.txn === 'blocked') return (transactionWaits(s, ctx, wi) ? 0 : 0b1) | 0b10;
      return 0b1;
    case 'readOutcome':
      if (w.txn === 'queued') return transactionWaits(s, ctx, wi) ? 0b10 : 0b1;
      return 0b1;
    case 'txCommit':
      return b.failures > 0 && w.txn !== 'dead' ? 0b11 : 0b1;
    case 'fail':
      return w.ending === 'none' && holdsFence(s.receipts[w.call]!, w.attempt, w.epoch) ? 0b11 : 0b1;
    default:
      return 0b1;
  }
}

/** Worker `wi` takes its next step with `choice`; returns a violation found on the way. */
export function stepWorker(s: ProtocolState, ctx: ModelContext, wi: number, choice: number): string | undefined {
  return STEPS[s.workers[wi]!.pc as Exclude<Pc, 'idle'>](s, ctx, wi, choice);
}

/** Whether worker `wi`'s lease keeper may beat now. */
export function beats(s: ProtocolState, wi: number): boolean {
  const w = s.workers[wi]!;
  return !w.stopped && !w.fencedOut && TOOL_RUNNING.has(w.pc);
}

/** A heartbeat of worker `wi`'s attempt; fenced out, it aborts the tool's signal. */
export function beat(s: ProtocolState, ctx: ModelContext, wi: number): string | undefined {
  const w = s.workers[wi]!;
  const { seen, violation } = fencedWrite(s, wi, () => heartbeat(s, ctx, w.call, w.attempt, w.epoch));
  if (seen.code === 0) w.fencedOut = true;
  return violation;
}

/** The first step of a delivered call: the approval gate, the limit's reserve, or the claim. */
export function firstStep(ctx: ModelContext, call: number): Pc {
  const spec = ctx.scenario.calls[call]!;
  return spec.approval ? 'gate' : spec.limited ? 'reserve' : 'claim';
}
