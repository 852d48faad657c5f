/**
 * Errors of transactional tools on PostgreSQL: the outcome table missing or
 * different from what the runner writes, a bad attempt identity, and the two
 * ways a transactional attempt can end without an outcome of its own
 * (certainly not committed, or not known). Branch on `code`.
 */
import { ToolReceiptsError } from '../core/errors.js';
import { DEFAULT_OUTCOME_SCHEMA, DEFAULT_OUTCOME_TABLE, type OutcomeTable } from './table.js';

/** The command that creates `target`, as an operator would type it: with `url` when it is known (passwords masked), else `<url>`. */
export function migrateCommand(target: Pick<OutcomeTable, 'schema' | 'table'>, url = '<url>'): string {
  const schema = target.schema === DEFAULT_OUTCOME_SCHEMA ? '' : ` --schema ${target.schema}`;
  const table = target.table === DEFAULT_OUTCOME_TABLE ? '' : ` --table ${target.table}`;
  return `tool-receipts migrate --postgres ${url}${schema}${table}`;
}

/** The identity of an attempt that is not one: an empty or oversized receipt key or epoch, an attempt number below 1. Nothing was written. */
export class InvalidTransactionalAttemptError extends ToolReceiptsError {
  readonly code = 'transactional.invalid_attempt';
}

/** The database has no outcome table where the runner looks for it. Nothing was written; the message prints the command that creates it. */
export class OutcomeTableMissingError extends ToolReceiptsError {
  readonly code = 'transactional.table_missing';
  /** `schema.table` as looked for. */
  readonly table: string;
  /** `tool-receipts migrate --postgres <url>` with the flags this table needs. */
  readonly command: string;

  /** `url`: the database's URL as shown to an operator (password masked), when the caller knows it. */
  constructor(target: OutcomeTable, url?: string) {
    const command = migrateCommand(target, url);
    super(`the outcome table ${target.schema}.${target.table} does not exist; create it with: ${command}`);
    this.table = `${target.schema}.${target.table}`;
    this.command = command;
  }
}

/**
 * A table stands where the outcome table should, but its columns, their
 * types or its unique key are not the ones the runner writes. Nothing was
 * written or changed; `differences` says what differs, one sentence each.
 */
export class OutcomeTableMismatchError extends ToolReceiptsError {
  readonly code = 'transactional.table_mismatch';
  readonly table: string;
  readonly differences: readonly string[];

  constructor(target: OutcomeTable, differences: readonly string[]) {
    super(`the table ${target.schema}.${target.table} is not an outcome table this version can use: ${differences.join('; ')}`);
    this.table = `${target.schema}.${target.table}`;
    this.differences = differences;
  }
}

/**
 * Why an attempt's transaction did not commit (each is certain of this
 * attempt: its writes are not in the database, and cannot appear later;
 * the first three say nothing of another attempt of the lifetime):
 * - `contended`: another attempt of the same lifetime held its outcome row
 *   uncommitted for longer than the lock timeout (or a session
 *   `statement_timeout` ended the wait); what that one does is not
 *   known here, so the lifetime is settled from the outcome row later.
 * - `taken_over`: a takeover held the lifetime's lock (it is deciding from
 *   the outcome row), so the attempt rolled back before its row.
 * - `not_confirmed`: `confirm` rejected (the receipt was taken over, or its
 *   store did not answer; the `cause` says which), so it rolled back before its row.
 * - `tool_failed`: the tool threw (its error is the `cause`); rolled back. Not
 *   when its statement failed because the connection was lost: that is a
 *   `database_error`.
 * - `result_not_serializable`: the tool's result has no faithful JSON form; rolled back.
 * - `database_error`: a statement failed or the connection was lost before
 *   COMMIT was sent (the `cause` says which).
 * - `commit_failed`: COMMIT was sent, and the database says the transaction
 *   aborted (a serialization failure, or the connection died before the
 *   server took the COMMIT).
 */
export type NotCommittedReason =
  'contended' | 'taken_over' | 'not_confirmed' | 'tool_failed' | 'result_not_serializable' | 'database_error' | 'commit_failed';

/** What names the attempt an error is about. */
export interface AttemptNames {
  readonly receiptKey: string;
  readonly epoch: string;
  readonly attempt: number;
}

const REASON_TEXT: Record<NotCommittedReason, string> = {
  tool_failed: 'the tool threw, so its transaction rolled back',
  contended: 'another attempt of this receipt lifetime holds its outcome row in an open transaction',
  taken_over: 'a takeover of this receipt lifetime holds it while deciding from the outcome row',
  not_confirmed: 'it could not confirm that it still holds its receipt',
  result_not_serializable: 'the result cannot be stored as JSON, so the transaction rolled back',
  database_error: 'the database failed before COMMIT was sent',
  commit_failed: 'COMMIT was sent and the database reports the transaction aborted',
};

/**
 * The attempt's transaction certainly did not commit: none of its writes are
 * in the database and none can appear later, so the call can be treated as
 * never started. `reason` says why; `cause` is the tool's or the driver's error.
 */
export class TransactionNotCommittedError extends ToolReceiptsError {
  readonly code = 'transactional.not_committed';
  readonly reason: NotCommittedReason;
  readonly receiptKey: string;
  readonly epoch: string;
  readonly attempt: number;

  constructor(names: AttemptNames, reason: NotCommittedReason, cause: unknown) {
    const detail = cause instanceof Error ? `: ${cause.message}` : '';
    const quiet = reason === 'contended' || reason === 'taken_over';
    super(`attempt ${names.attempt} of ${names.receiptKey} did not commit: ${REASON_TEXT[reason]}${quiet ? '' : detail}`, {
      cause,
    });
    this.reason = reason;
    this.receiptKey = names.receiptKey;
    this.epoch = names.epoch;
    this.attempt = names.attempt;
  }
}

/**
 * COMMIT was sent but its reply never came, and the database could not be
 * asked in time whether the transaction committed (it was unreachable, or
 * the transaction was still open and could not be ended). The outcome row
 * says it later: {@link readOutcome}, or the next attempt's own insert.
 */
export class TransactionOutcomeUnknownError extends ToolReceiptsError {
  readonly code = 'transactional.outcome_unknown';
  readonly receiptKey: string;
  readonly epoch: string;
  readonly attempt: number;

  constructor(names: AttemptNames, detail: string, cause: unknown) {
    super(
      `attempt ${names.attempt} of ${names.receiptKey} sent COMMIT and lost the reply; whether it committed is not known yet: ${detail}`,
      { cause },
    );
    this.receiptKey = names.receiptKey;
    this.epoch = names.epoch;
    this.attempt = names.attempt;
  }
}
