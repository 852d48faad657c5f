/**
 * The seam between the runner and a PostgreSQL driver: what a driver must do
 * (one transaction around a body, a statement inside it, a statement outside
 * any), and the database object the runner, the setup and retention take,
 * which is a driver plus the outcome table it writes.
 *
 * The transaction is a callback, not begin/commit handles, because that is
 * all Drizzle and Kysely offer: the runner learns that COMMIT was sent from
 * the body having returned, which is all it needs (see runTransactional).
 */
import { InvalidOptionsError, shaped } from '../core/options.js';
import { outcomeTable, type OutcomeTable, type OutcomeTableOptions } from './table.js';

/** Rows as a driver returns them: one object per row, keyed by column name. */
export type Rows = readonly Readonly<Record<string, unknown>>[];

/** The isolation levels a transactional tool can run at. */
export type IsolationLevel = 'read committed' | 'repeatable read' | 'serializable';

/** What a driver hands the runner inside an open transaction. */
export interface DriverTransaction<Tx> {
  /** The driver's own transaction object, which the tool receives. */
  readonly tx: Tx;
  /**
   * Runs one statement with `$1`-style parameters inside the transaction and
   * resolves to its rows. A failure rejects with the driver's error; its
   * SQLSTATE must be readable as `code` on it or on an error in its `cause` chain.
   */
  query(text: string, params: readonly unknown[]): Promise<Rows>;
}

/**
 * A PostgreSQL driver as the runner uses it. Implement it to use a driver
 * this package has no adapter for (docs/transactional.md has an example).
 */
export interface TransactionalDriver<Tx> {
  /** Names the driver in messages: `pg`, `drizzle`, `kysely`, … */
  readonly name: string;
  /**
   * Takes a connection no other transaction is using, starts a transaction
   * at `isolation` on it, and runs `body`. When `body` resolves, sends
   * COMMIT and resolves with `body`'s value once the server acknowledged it;
   * when `body` rejects, rolls back and rejects with `body`'s error (a
   * failed rollback may reject with its own). Never retries, never commits
   * after `body` rejected, and does not hand the connection to anyone else
   * while the transaction is open. A connection that failed must not be
   * reused.
   */
  transaction<T>(isolation: IsolationLevel, body: (transaction: DriverTransaction<Tx>) => Promise<T>): Promise<T>;
  /**
   * Runs one statement on its own (autocommit), on any connection except one
   * an open {@link TransactionalDriver.transaction} holds, and resolves to its rows.
   */
  query(text: string, params: readonly unknown[]): Promise<Rows>;
}

/**
 * A database for transactional tools: a driver, and the outcome table its
 * attempts write. Build one with {@link pgDatabase}, {@link drizzleDatabase},
 * {@link kyselyDatabase}, or {@link transactionalDatabase} for a driver of your own.
 */
export interface TransactionalDatabase<Tx> {
  readonly driver: TransactionalDriver<Tx>;
  readonly outcomes: OutcomeTable;
}

/**
 * A database from a driver of your own and the outcome table's names
 * (default `public.tool_receipt_outcomes`). Throws `InvalidOptionsError` for
 * a driver without `transaction` and `query`, or a table name that is not a
 * plain lower-case identifier.
 */
export function transactionalDatabase<Tx>(
  driver: TransactionalDriver<Tx>,
  options: OutcomeTableOptions = {},
  owner = 'transactionalDatabase',
): TransactionalDatabase<Tx> {
  shaped('a driver with transaction() and query()', ['transaction', 'query']).check(driver, { owner, option: 'driver' });
  return Object.freeze({ driver, outcomes: outcomeTable(options, owner) });
}

/** Refuses a driver object of the wrong kind, for the adapters. */
export function refuseDriver(owner: string, wants: string): InvalidOptionsError {
  return new InvalidOptionsError(owner, 'db', `the first argument must be ${wants}`);
}

/**
 * The SQLSTATE of a driver error: its own `code` when that is five
 * characters of digits and capitals, else the first such `code` down its
 * `cause` chain (Drizzle wraps the pg error in its own).
 */
export function sqlState(error: unknown): string | undefined {
  for (let e = error, depth = 0; e !== null && typeof e === 'object' && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

/** SQLSTATEs the runner acts on. */
export const SQLSTATE = {
  uniqueViolation: '23505',
  lockNotAvailable: '55P03',
  queryCanceled: '57014',
  undefinedTable: '42P01',
} as const;
