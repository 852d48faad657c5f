/**
 * The invariants, checked at every state the checker reaches (and, for the
 * ones about a single move, as the move is made: see `fencedWrite`,
 * `park`, `refuse` and {@link decideChecked}). Each answers a sentence
 * naming what broke, or undefined.
 */
import type { ModelContext } from './hooks.js';
import { OPERATOR_RESULT, resultOf, type ProtocolState } from './state.js';

/** The invariants of one state. */
export function checkState(s: ProtocolState, ctx: ModelContext): string | undefined {
  for (const g of s.ghosts) {
    if (g.effects > 1) return `call ${g.call}'s opaque effect ran ${g.effects} times in one lifetime`;
    if (g.commits > 1) return `call ${g.call}'s transactional write committed ${g.commits} times in one lifetime`;
    const r = s.receipts[g.call]!;
    if (r.epoch !== g.epoch) continue;
    if (g.completedWith !== 0 && (r.status !== 'completed' || r.result !== g.completedWith)) {
      return `call ${g.call}'s completed receipt changed (${r.status}, result ${r.result}; it completed with ${g.completedWith})`;
    }
    if (g.flaggedAttempt !== 0 && r.status === 'running' && r.attempts === g.flaggedAttempt && !r.ambiguous) {
      return `call ${g.call}: attempt ${g.flaggedAttempt} was reported ambiguous, and the flag went without a settle`;
    }
  }
  let limitedRuns = 0;
  for (let call = 0; call < s.receipts.length; call++) {
    const spec = ctx.scenario.calls[call]!;
    const r = s.receipts[call]!;
    if (spec.effect === 'transactional' && r.status === 'completed' && r.result !== OPERATOR_RESULT) {
      const row = s.rows[call]!.find((row) => row.epoch === r.epoch && row.state === 'committed');
      if (row === undefined) return `call ${call}'s transactional receipt completed without a committed outcome row`;
      if (resultOf(row.attempt) !== r.result) return `call ${call}'s receipt completed with another result than the committed row's`;
    }
    if (spec.approval && s.runs[call]! > s.approves[call]!) {
      return `call ${call} ran ${s.runs[call]} times on ${s.approves[call]} approvals`;
    }
    if (spec.limited) limitedRuns += s.runs[call]!;
  }
  if (limitedRuns > ctx.scenario.limitMax) return `the limit of ${ctx.scenario.limitMax} let ${limitedRuns} executions run in its window`;
  return undefined;
}

/**
 * The approver decides on `call` with the epoch of the form it has open. A
 * decision about an approval already decided must be refused as not
 * pending, naming who decided (docs/approvals.md), however the receipt moved
 * on since (its claim mints a new epoch).
 */
export function decideChecked(s: ProtocolState, ctx: ModelContext, call: number, approve: boolean): string | undefined {
  const named = s.forms[call]!;
  const r = s.receipts[call]!;
  const ghost = s.ghosts.find((g) => g.call === call && g.epoch === named);
  const decidedBefore = ghost !== undefined && ghost.decision !== 0 && r.approvalEpoch === named;
  const answer = ctx.hooks.decideApproval(s, call, named, approve);
  if (!decidedBefore) return undefined;
  if (answer.kind === 'refused' && answer.why === 'not_pending' && answer.by !== 'none') return undefined;
  const got = answer.kind === 'ok' ? `written (${answer.decision})` : `refused as ${answer.why}`;
  return `a late decision on call ${call}'s approval was ${got}, not refused as not pending naming who decided`;
}
