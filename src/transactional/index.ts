/**
 * Transactional tools on PostgreSQL (`bullmq-tool-receipts/transactional`):
 * a tool's writes and its outcome row committed in one transaction, so a
 * receipt lifetime's outcome commits exactly once; the adapters for
 * node-postgres, Drizzle and Kysely; the outcome table's setup and retention.
 * Loads without any PostgreSQL driver installed: each adapter takes the
 * driver object the app already has.
 */
export {
  transactionalDatabase,
  type DriverTransaction,
  type IsolationLevel,
  type Rows,
  type TransactionalDatabase,
  type TransactionalDriver,
} from './database.js';
export { pgDatabase, type PgClientLike, type PgClientOf, type PgPoolLike } from './pg.js';
export { drizzleDatabase, type DrizzleDatabaseLike } from './drizzle.js';
export { kyselyDatabase, type KyselyLike } from './kysely.js';
export {
  InvalidTransactionalAttemptError,
  OutcomeTableMismatchError,
  OutcomeTableMissingError,
  TransactionNotCommittedError,
  TransactionOutcomeUnknownError,
  migrateCommand,
  type AttemptNames,
  type NotCommittedReason,
} from './errors.js';
export {
  MAX_EPOCH_CHARS,
  MAX_RECEIPT_KEY_BYTES,
  runTransactional,
  type RunTransactionalOptions,
  type TransactionalAttempt,
  type TransactionalRun,
} from './run.js';
export { readOutcome, type CommittedOutcome } from './outcome.js';
export { applyOutcomeTable, checkOutcomeTable, type OutcomeTableMigration } from './setup.js';
export { deleteExpiredOutcomes, type OutcomeRetentionOptions, type OutcomeRetentionReport } from './retention.js';
export {
  DEFAULT_OUTCOME_SCHEMA,
  DEFAULT_OUTCOME_TABLE,
  OUTCOME_COLUMNS,
  OUTCOME_KEY,
  outcomeTable,
  outcomeTableDdl,
  type OutcomeColumn,
  type OutcomeTable,
  type OutcomeTableOptions,
} from './table.js';
