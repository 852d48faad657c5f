/** One run's receipts with the resume note a resumed agent of the run is given. */
import { buildResumeJournalNote, journalFromReceipts, type ToolCallJournal } from '../core/journal.js';
import type { ReceiptRecord } from '../redis/receipts/reads/record.js';

/** What `run --json` prints. */
export interface RunReport {
  readonly tenantId: string;
  readonly runId: string;
  /** The run's live receipts, oldest first. */
  readonly receipts: ReceiptRecord[];
  /** The journal built from them with `journalFromReceipts`. */
  readonly journal: ToolCallJournal;
  /** `buildResumeJournalNote` of that journal; `null` when there is nothing to tell. */
  readonly note: string | null;
  /** True when the run has no receipt and nothing at all exists under the prefix (a mistyped `--prefix`?). */
  readonly prefixEmpty: boolean;
  /** True when the run has no receipt and the tenant has none under the prefix either (a mistyped tenant?). */
  readonly tenantEmpty: boolean;
}

/** Builds the report of a run from its receipts (no I/O). */
export function runReport(
  tenantId: string,
  runId: string,
  receipts: ReceiptRecord[],
  empty: { readonly prefixEmpty: boolean; readonly tenantEmpty: boolean } = { prefixEmpty: false, tenantEmpty: false },
): RunReport {
  const journal = journalFromReceipts(receipts);
  return { tenantId, runId, receipts, journal, note: buildResumeJournalNote(journal), ...empty };
}
