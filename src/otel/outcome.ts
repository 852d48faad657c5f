/**
 * How a call ended, from what the wrapper told its observation: the outcome
 * label spans and metrics carry.
 */
import type { ObservedEnd } from '../bullmq/call/facts.js';
import type { ToolCallOutcome } from '../bullmq/job-data.js';

/**
 * `waited`: the job was parked, for a live attempt, an approval or a limit. `fenced_out` / `aborted`: the attempt
 * ended without settling the receipt. `outcome_unknown`: the tool threw
 * `OutcomeUnknownError` and the job failed on it (an opaque call is now
 * ambiguous; a resumable one is taken over by the next delivery). `error`:
 * anything else that escaped (Redis unreachable, a shaping error).
 */
export type CallOutcomeLabel = ToolCallOutcome | 'waited' | 'fenced_out' | 'aborted' | 'outcome_unknown' | 'error';

/** The milestones an observation saw before the call ended. */
export interface SeenMilestones {
  readonly decision: string | undefined;
  readonly waited: boolean;
  readonly fencedOut: boolean;
  readonly aborted: boolean;
  readonly outcomeUnknown: boolean;
  readonly settled: 'executed' | 'failed' | undefined;
}

/**
 * The outcome of a call: the block's own when one was returned; otherwise
 * the first milestone that explains the thrown error.
 */
export function outcomeOf(end: ObservedEnd, seen: SeenMilestones): CallOutcomeLabel {
  if (end.result) return end.result.outcome;
  if (seen.waited) return 'waited';
  if (seen.fencedOut) return 'fenced_out';
  if (seen.aborted) return 'aborted';
  if (seen.outcomeUnknown) return 'outcome_unknown';
  if (seen.settled === 'failed') return 'failed';
  if (seen.decision === 'ambiguous') return 'ambiguous';
  return 'error';
}
