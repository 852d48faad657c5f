/**
 * The approval scripts of lua/ as transitions of the model: the gate a call
 * of a tool with an approval rule passes before its claim
 * (approval-gate-3.lua) and a person's decision (decide-approval-3.lua), in
 * the fixed order of issue 41: a receipt no longer awaiting approval is
 * refused as not pending, naming who decided, whatever its epoch became.
 */
import { ghostOf, type Effect, type ProtocolState } from './state.js';
import type { ScriptContext } from './receipt-scripts.js';

/** approval-gate-3.lua's answer (`created`: this gate wrote the awaiting receipt, or its expiry). */
export interface GateAnswer {
  readonly answer: 'claim' | 'await' | 'approved' | 'denied';
  readonly created: boolean;
  readonly epoch: number;
  readonly by: 'none' | 'approver' | 'expiry';
}

/** approval-gate-3.lua for a call that needs approval; `token` is the epoch of an awaiting receipt it creates. */
export function approvalGate(s: ProtocolState, ctx: ScriptContext, call: number, effect: Effect, token: number): GateAnswer {
  const r = s.receipts[call]!;
  switch (r.status) {
    case 'absent':
      r.status = 'awaiting';
      r.attempts = 0;
      // The gate records the effect a claim records (src/bullmq/outcomes/approval.ts), transactional too.
      r.effect = effect;
      r.epoch = token;
      r.approvalEpoch = token;
      r.approvalLeft = ctx.scenario.ticks.approval;
      r.decidedBy = 'none';
      return { answer: 'await', created: true, epoch: token, by: 'none' };
    case 'awaiting':
      if (r.approvalLeft > 0) return { answer: 'await', created: false, epoch: r.epoch, by: 'none' };
      r.status = 'denied';
      r.decidedBy = 'expiry';
      ghostOf(s, call, r.epoch).decision = -1;
      return { answer: 'denied', created: true, epoch: r.epoch, by: 'expiry' };
    case 'approved':
      return { answer: 'approved', created: false, epoch: r.epoch, by: r.decidedBy };
    case 'denied':
      return { answer: 'denied', created: false, epoch: r.epoch, by: r.decidedBy };
    default:
      return { answer: 'claim', created: false, epoch: r.epoch, by: 'none' };
  }
}

/** decide-approval-3.lua's answer: written, or refused and why (the digest is always the call's own here). */
export type DecisionAnswer =
  | { readonly kind: 'ok'; readonly decision: 'approved' | 'denied' }
  | { readonly kind: 'refused'; readonly why: 'not_pending' | 'stale_lifetime' | 'expired'; readonly by: 'none' | 'approver' | 'expiry' };

/**
 * decide-approval-3.lua as issue 41 fixed it: the lifetime a decision may
 * name is the receipt's epoch or, once an approved call started (the claim
 * mints a new epoch), the approval's; a decision about a lifetime somebody
 * already decided is refused as not pending, naming who, and one about a
 * lifetime the receipt never had as another lifetime.
 */
export function decideApproval(s: ProtocolState, call: number, epoch: number, approve: boolean): DecisionAnswer {
  const r = s.receipts[call]!;
  if (r.status === 'absent') return { kind: 'refused', why: 'not_pending', by: 'none' };
  if (r.epoch !== epoch && r.approvalEpoch !== epoch) return { kind: 'refused', why: 'stale_lifetime', by: r.decidedBy };
  if (r.status !== 'awaiting') return { kind: 'refused', why: 'not_pending', by: r.decidedBy };
  return writeDecision(s, call, approve);
}

/** The write both orders share once every check passed (or refused as expired). */
export function writeDecision(s: ProtocolState, call: number, approve: boolean): DecisionAnswer {
  const r = s.receipts[call]!;
  if (r.approvalLeft === 0) return { kind: 'refused', why: 'expired', by: r.decidedBy };
  r.status = approve ? 'approved' : 'denied';
  r.decidedBy = 'approver';
  ghostOf(s, call, r.epoch).decision = approve ? 1 : -1;
  if (approve) s.approves[call]! += 1;
  return { kind: 'ok', decision: approve ? 'approved' : 'denied' };
}
