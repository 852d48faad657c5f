/**
 * Seeded defects: the model broken on purpose, one hook at a time, each a
 * defect an interleaving of real workers would turn into a broken promise.
 * The checker must find every one (test/protocol/seeded-defects.test.ts):
 * a checker that passes a broken model checks nothing.
 */
import { writeDecision, type DecisionAnswer } from './approval-scripts.js';
import { PROTOCOL_HOOKS, type ProtocolHooks } from './hooks.js';
import type { Observed } from './receipt-scripts.js';
import type { ProtocolState } from './state.js';

/**
 * decide-approval-3.lua before issue 41: the epoch compared before the
 * status, so a decision arriving after the claim minted a new epoch is
 * refused as another lifetime, naming nobody.
 */
function decideEpochFirst(s: ProtocolState, call: number, epoch: number, approve: boolean): DecisionAnswer {
  const r = s.receipts[call]!;
  if (r.status === 'absent') return { kind: 'refused', why: 'not_pending', by: 'none' };
  if (r.epoch !== epoch) return { kind: 'refused', why: 'stale_lifetime', by: 'none' };
  if (r.status !== 'awaiting') return { kind: 'refused', why: 'not_pending', by: r.decidedBy };
  return writeDecision(s, call, approve);
}

/** complete-4.lua with the epoch comparison deleted: an attempt of an old lifetime completes the new one at its number. */
function completeWithoutEpoch(s: ProtocolState, call: number, attempt: number, _epoch: number, result: number): Observed {
  const r = s.receipts[call]!;
  return PROTOCOL_HOOKS.complete(s, call, attempt, r.status === 'running' && r.attempts === attempt ? r.epoch : -1, result);
}

/** The seeded defects, by name: each the protocol's hooks with one replaced. */
export const SEEDED_DEFECTS = {
  'the epoch checked before the status in an approval decision': { ...PROTOCOL_HOOKS, decideApproval: decideEpochFirst },
  'a takeover that decides while a stalled transaction can still commit': { ...PROTOCOL_HOOKS, takeover: 'committed-rows-only' },
  'a limit reservation that a redelivery cannot recognise': { ...PROTOCOL_HOOKS, reusesOwnReservation: false },
  'a complete that does not check the epoch': { ...PROTOCOL_HOOKS, complete: completeWithoutEpoch },
  // The claim takes a lapsed opaque attempt over (a reclaim) instead of flagging it ambiguous.
  'a reclaim that does not flag an opaque receipt ambiguous': { ...PROTOCOL_HOOKS, mayTakeOver: () => true },
} satisfies Record<string, ProtocolHooks>;

export type SeededDefect = keyof typeof SEEDED_DEFECTS;
