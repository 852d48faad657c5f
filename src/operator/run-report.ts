/** One run's receipts with the resume note a resumed agent of the run is given. */
import { buildResumeJournalNote, journalFromReceipts, type ToolCallJournal } from '../core/journal.js';
import type { ReceiptRecord } from '../redis/receipt-record.js';

/** A run's receipts and what its resume journal says about them (what `run --json` prints). */
export interface RunReport {
  readonly tenantId: string;
  readonly runId: string;
  /** The run's live receipts, oldest first. */
  readonly receipts: ReceiptRecord[];
  /** The journal built from them with `journalFromReceipts`. */
  readonly journal: ToolCallJournal;
  /** `buildResumeJournalNote` of that journal; `null` when there is nothing to tell. */
  readonly note: string | null;
}

/** Builds the report of a run from its receipts (no I/O). */
export function runReport(tenantId: string, runId: string, receipts: ReceiptRecord[]): RunReport {
  const journal = journalFromReceipts(receipts);
  return { tenantId, runId, receipts, journal, note: buildResumeJournalNote(journal) };
}
