/**
 * The results of the calls that completed in a job that failed, written to the
 * job's log for the host.
 */
import type { ToolResultBlock } from '../../core/job-data.js';

/**
 * A job that fails because one of its calls is ambiguous still has the
 * results of the calls that did complete. The processor writes them to the
 * job's log as one line starting with this prefix, so a host (or the client)
 * can read them back with `queue.getJobLogs(jobId)` and append them.
 */
export const PARTIAL_RESULTS_LOG_PREFIX = 'tool-receipts:partial-results ';

/** What the partial-results log line holds. */
export interface PartialResults {
  /** The blocks of the calls that ended before the ambiguous one, in call order. */
  readonly results: readonly ToolResultBlock[];
  /** The call whose outcome is unknown. */
  readonly ambiguous: { readonly tool_use_id: string; readonly tool: string; readonly receiptKey: string };
}

/** The job-log line for {@link PartialResults}. */
export function formatPartialResultsLog(partial: PartialResults): string {
  return PARTIAL_RESULTS_LOG_PREFIX + JSON.stringify(partial);
}

/** Read {@link PartialResults} back from one job-log line; `undefined` for any other line. */
export function parsePartialResultsLog(line: string): PartialResults | undefined {
  if (!line.startsWith(PARTIAL_RESULTS_LOG_PREFIX)) return undefined;
  try {
    const value = JSON.parse(line.slice(PARTIAL_RESULTS_LOG_PREFIX.length)) as PartialResults;
    if (!Array.isArray(value?.results) || typeof value?.ambiguous?.receiptKey !== 'string') return undefined;
    return value;
  } catch {
    return undefined;
  }
}
