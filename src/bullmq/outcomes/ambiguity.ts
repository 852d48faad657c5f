/**
 * What the wrapper does with a call whose outcome cannot be known: fail the
 * job, or report it to the model, and keep the other calls' results.
 */
import { UnrecoverableError, type Job } from 'bullmq';
import type { Logger } from 'pino';
import { AmbiguousToolCallError, unrecoverable } from '../errors.js';
import type { ToolCall, ToolResultBlock } from '../../core/job-data.js';
import { formatPartialResultsLog } from '../turn/partial-results.js';
import type { CallFacts } from '../call/facts.js';

/** The sentence the model reads for a call whose outcome is unknown: nothing was run again, and why. */
export const ambiguousText = (toolName: string): string =>
  `The outcome of this ${toolName} call is unknown: an earlier attempt may or may not have completed it, so it was not run again. ` +
  'Do not assume it succeeded or failed; ask the user or check the external system.';

/**
 * Act on a call whose outcome is unknown (a claim found its attempt lost
 * mid-effect, or the tool said so with `OutcomeUnknownError`): report the
 * fact (the `ambiguous` event and its log line), and either return the error
 * result for the model (`onAmbiguous: 'report'`) or throw BullMQ's
 * `UnrecoverableError` around {@link AmbiguousToolCallError} (`'fail'`).
 * Never runs anything.
 */
export function ambiguousOutcome(onAmbiguous: 'fail' | 'report', call: ToolCall, facts: CallFacts, reason: string): ToolResultBlock {
  facts.ambiguous(reason);
  if (onAmbiguous === 'report') {
    return { type: 'tool_result', tool_use_id: call.id, content: ambiguousText(call.name), is_error: true, outcome: 'ambiguous' };
  }
  throw unrecoverable(new AmbiguousToolCallError(facts.receiptKey ?? '', call.name, call.id, reason));
}

/**
 * When a job fails because a call is ambiguous, keep the results of the calls
 * that ended before it: on the error (`AmbiguousToolCallError.results`, the
 * `cause` of the UnrecoverableError) and as one line of the job's log
 * (`formatPartialResultsLog`), so a host can still append them. Any other
 * error is left alone. A log write that fails is logged, never thrown over
 * the job's own error.
 */
export async function keepPartialResults(job: Job, results: readonly ToolResultBlock[], error: unknown, log: Logger): Promise<void> {
  if (!(error instanceof UnrecoverableError)) return;
  const cause = (error as { cause?: unknown }).cause;
  if (!(cause instanceof AmbiguousToolCallError)) return;
  cause.results = [...results];
  const ambiguous = { tool_use_id: cause.callId, tool: cause.tool, receiptKey: cause.receiptKey };
  try {
    await job.log(formatPartialResultsLog({ results: cause.results, ambiguous }));
  } catch (logError) {
    log.warn({ err: logError, jobId: job.id }, 'could not write the partial results of an ambiguous job to its log');
  }
}
