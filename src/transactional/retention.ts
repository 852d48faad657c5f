/**
 * Retention of outcome rows: deletes the rows of attempts that started more
 * than a retention ago, a bounded batch per statement so no delete holds
 * many row locks or runs long, and never waits on a row another session holds.
 */
import { checkOptions, wholeNumber, type OptionsSchema } from '../core/options.js';
import type { TransactionalDatabase } from './database.js';

/** How much to delete. */
export interface OutcomeRetentionOptions {
  /** Rows whose attempt started more than this long ago (by the database's clock) go. */
  readonly olderThanMs: number;
  /** Rows per DELETE statement; default 1,000. */
  readonly batchSize?: number;
  /** Statements per call; default 100. When they are used up, `more` says whether rows were left. */
  readonly maxBatches?: number;
}

/** What {@link deleteExpiredOutcomes} did. */
export interface OutcomeRetentionReport {
  readonly deleted: number;
  /** DELETE statements run. */
  readonly batches: number;
  /** The last batch was full, so expired rows may remain: call again. */
  readonly more: boolean;
}

const RETENTION_SCHEMA: OptionsSchema<OutcomeRetentionOptions> = {
  olderThanMs: { ...wholeNumber(1, 'ms'), required: true },
  batchSize: wholeNumber(1, 'rows', 100_000),
  maxBatches: wholeNumber(1, 'statements'),
};

/**
 * Deletes outcome rows whose attempt started more than `olderThanMs` ago,
 * `batchSize` rows per statement, until a batch comes back short or
 * `maxBatches` statements ran. Each statement commits on its own. Rows
 * locked by another session (none should be, once expired) are skipped,
 * not waited on.
 *
 * A row must outlive every attempt of its lifetime that could still start:
 * once it is gone, a stalled attempt of that lifetime that resumes could
 * insert it anew. Keep `olderThanMs` above the receipts' retention.
 */
export async function deleteExpiredOutcomes(
  db: TransactionalDatabase<unknown>,
  options: OutcomeRetentionOptions,
): Promise<OutcomeRetentionReport> {
  checkOptions('deleteExpiredOutcomes', options, RETENTION_SCHEMA);
  const batchSize = options.batchSize ?? 1_000;
  const maxBatches = options.maxBatches ?? 100;
  const table = db.outcomes.qualified;
  let deleted = 0;
  let batches = 0;
  for (;;) {
    const rows = await db.driver.query(
      `WITH gone AS (
         DELETE FROM ${table} WHERE ctid = ANY (ARRAY(
           SELECT ctid FROM ${table} WHERE started_at < now() - make_interval(secs => $1::float8 / 1000)
            LIMIT $2 FOR UPDATE SKIP LOCKED))
         RETURNING 1)
       SELECT count(*)::text AS n FROM gone`,
      [options.olderThanMs, batchSize],
    );
    const n = Number(rows[0]?.['n'] ?? 0);
    deleted += n;
    batches += 1;
    if (n < batchSize) return { deleted, batches, more: false };
    if (batches >= maxBatches) return { deleted, batches, more: true };
  }
}
