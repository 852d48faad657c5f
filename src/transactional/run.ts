/**
 * One attempt of a transactional tool: its writes and its outcome row in one
 * PostgreSQL transaction, so the lifetime's outcome commits exactly once.
 *
 * The row goes in first, under the unique key (receipt_key, epoch). Another
 * attempt of the same lifetime that inserts after it waits on that row: it
 * fails with a unique violation once this one commits (and replays the
 * committed result), or takes the row once this one rolls back. The wait is
 * bounded by `lock_timeout`, and a transaction left open (a process stopped
 * with it) is ended by the server after `idle_in_transaction_session_timeout`.
 */
import { checkOptions, oneOf, wholeNumber, MAX_TIMER_MS, type OptionsSchema } from '../core/options.js';
import { NO_VALUE, fromStoredJson, toStoredJson } from '../redis/receipts/channel.js';
import { SQLSTATE, sqlState, type IsolationLevel, type TransactionalDatabase } from './database.js';
import {
  InvalidTransactionalAttemptError,
  TransactionNotCommittedError,
  TransactionOutcomeUnknownError,
  type AttemptNames,
  type NotCommittedReason,
} from './errors.js';
import { readOutcome, transactionFate, type CommittedOutcome, type TransactionTrace } from './outcome.js';
import { LIFETIME_LOCK_SPACE, lifetimeLockKey } from './takeover.js';

/** Which attempt of which receipt lifetime this is. */
export interface TransactionalAttempt {
  /** The receipt's key (the Redis key of the call's receipt). */
  readonly receiptKey: string;
  /** The receipt lifetime's epoch, as its claim returned it. */
  readonly epoch: string;
  /** The attempt number within the lifetime, from 1; each attempt of a lifetime has its own. */
  readonly attempt: number;
  /**
   * Called inside the transaction once it holds its lifetime's lock and
   * before the outcome row goes in; rejecting rolls the attempt back (not
   * committed, reason `not_confirmed`, its error the cause). The wrapper
   * passes a fenced heartbeat, so an attempt whose receipt was taken over
   * while it stalled never inserts (see `holdLifetime`). Optional for a
   * caller without receipts.
   */
  readonly confirm?: () => Promise<void>;
}

/** How an attempt runs. */
export interface RunTransactionalOptions {
  /**
   * Isolation of the tool's transaction; default `'read committed'`. The
   * outcome row's unique key, not the snapshot, is what keeps two attempts
   * from both committing, so the stronger levels buy the tool's own reads
   * nothing the runner needs; they are there for tools that need them (and
   * then fail more often on serialization errors, which end as not committed).
   */
  readonly isolation?: IsolationLevel;
  /** How long the outcome row's insert waits on another attempt holding it; default 5,000 ms. Past it the attempt ends `contended` (not committed). */
  readonly lockTimeoutMs?: number;
  /**
   * `idle_in_transaction_session_timeout` for the attempt's transaction: the
   * server ends it, and so releases the outcome row, when the client sends
   * nothing for this long (a process stopped or cut off mid-transaction).
   * Default 60,000 ms; 0 leaves the session's setting as it is.
   */
  readonly idleInTransactionTimeoutMs?: number;
  /** How long to keep asking whether a transaction whose COMMIT reply was lost committed; default 10,000 ms. */
  readonly settleTimeoutMs?: number;
}

/**
 * How an attempt ended:
 * - `committed`: its writes and its outcome row committed; `result` is the
 *   stored result (the JSON round trip of what the tool returned), the same
 *   value a replay reads.
 * - `replay`: another attempt of the lifetime had committed; the tool did
 *   not run (or its writes rolled back), and `outcome` is the committed one.
 * - `not_committed`: certainly not committed; nothing of it is or will be in
 *   the database, so the call can be treated as never started.
 * - `outcome_unknown`: COMMIT was sent, the reply lost, and the database
 *   could not say in time whether it committed. The outcome row will tell:
 *   {@link readOutcome}, or the next attempt's own insert.
 */
export type TransactionalRun =
  | { readonly status: 'committed'; readonly result: unknown; readonly attempt: number }
  | { readonly status: 'replay'; readonly result: unknown; readonly outcome: CommittedOutcome }
  | { readonly status: 'not_committed'; readonly error: TransactionNotCommittedError }
  | { readonly status: 'outcome_unknown'; readonly error: TransactionOutcomeUnknownError };

/** Default of `lockTimeoutMs`. */
export const DEFAULT_LOCK_TIMEOUT_MS = 5_000;
/** Default of `idleInTransactionTimeoutMs`. */
export const DEFAULT_IDLE_IN_TRANSACTION_MS = 60_000;

/** The longest receipt key accepted: it is half of the unique key, and a btree entry holds at most about 2.7 kB. */
export const MAX_RECEIPT_KEY_BYTES = 2048;
/** The longest epoch accepted (the receipts mint 20 characters). */
export const MAX_EPOCH_CHARS = 128;
const MAX_ATTEMPT = 2 ** 31 - 1;

/** The rule of each {@link RunTransactionalOptions} option (also checked when a transactional tool is defined). */
export const RUN_TRANSACTIONAL_SCHEMA: OptionsSchema<RunTransactionalOptions> = {
  isolation: oneOf('read committed', 'repeatable read', 'serializable'),
  lockTimeoutMs: wholeNumber(1, 'ms', MAX_TIMER_MS),
  idleInTransactionTimeoutMs: wholeNumber(0, 'ms', MAX_TIMER_MS),
  settleTimeoutMs: wholeNumber(0, 'ms', MAX_TIMER_MS),
};

/** Checks an attempt's identity; throws {@link InvalidTransactionalAttemptError}. */
export function checkAttempt(attempt: TransactionalAttempt): TransactionalAttempt {
  const { receiptKey, epoch, attempt: n } = (attempt ?? {}) as Partial<TransactionalAttempt>;
  if (typeof receiptKey !== 'string' || receiptKey === '' || Buffer.byteLength(receiptKey) > MAX_RECEIPT_KEY_BYTES) {
    throw new InvalidTransactionalAttemptError(`receiptKey must be a non-empty string of at most ${MAX_RECEIPT_KEY_BYTES} UTF-8 bytes`);
  }
  if (typeof epoch !== 'string' || epoch === '' || epoch.length > MAX_EPOCH_CHARS) {
    throw new InvalidTransactionalAttemptError(`epoch must be a non-empty string of at most ${MAX_EPOCH_CHARS} characters`);
  }
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1 || n > MAX_ATTEMPT) {
    throw new InvalidTransactionalAttemptError(`attempt must be a whole number from 1 to ${MAX_ATTEMPT}`);
  }
  const { confirm } = attempt;
  if (confirm !== undefined && typeof confirm !== 'function') throw new InvalidTransactionalAttemptError('confirm must be a function');
  return confirm === undefined ? { receiptKey, epoch, attempt: n } : { receiptKey, epoch, attempt: n, confirm };
}

/** Thrown inside the transaction to roll it back for a reason the runner already knows. */
class Refusal {
  constructor(
    readonly reason: NotCommittedReason | 'lost_race',
    readonly cause: unknown,
  ) {}
}

/**
 * Runs one attempt of a transactional tool: BEGIN; take the lifetime's lock
 * (shared; a takeover holding it makes the attempt roll back at once) and
 * `confirm`; insert the lifetime's
 * outcome row (waiting at most `lockTimeoutMs` on another attempt's); run
 * `tool` with the driver's transaction object; write its result into the
 * row; COMMIT. Resolves to how it ended and never rejects for a database or
 * tool failure (only for a bad `attempt` or bad options, before anything runs).
 *
 * The tool must do nothing but read and write this database through `tx`:
 * no remote call, no email, no write through another connection, for none
 * of those roll back with the transaction, and the tool may run again after
 * a rollback. It must await every query it starts, and not commit, roll back
 * or end the transaction itself.
 */
export async function runTransactional<Tx>(
  db: TransactionalDatabase<Tx>,
  attempt: TransactionalAttempt,
  tool: (tx: Tx) => Promise<unknown>,
  options: RunTransactionalOptions = {},
): Promise<TransactionalRun> {
  const names = checkAttempt(attempt);
  checkOptions('runTransactional', options, RUN_TRANSACTIONAL_SCHEMA);
  const lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
  const idleMs = options.idleInTransactionTimeoutMs ?? DEFAULT_IDLE_IN_TRANSACTION_MS;
  const table = db.outcomes.qualified;
  let trace: TransactionTrace | undefined;
  let stored: string | undefined;
  let commitSent = false;
  // Kept here as well as thrown: a driver whose rollback fails rejects with
  // the rollback's error instead of the one the body threw.
  let refusal: Refusal | undefined;
  const refuse = (reason: Refusal['reason'], cause: unknown) => (refusal = new Refusal(reason, cause));
  try {
    await db.driver.transaction(options.isolation ?? 'read committed', async ({ tx, query }) => {
      // The lifetime's lock, shared, held to the transaction's end: a takeover ends whoever holds it (holdLifetime).
      const [prepared] = await query(
        `SELECT s.previous, set_config('lock_timeout', $1, true) AS lock_timeout,
                CASE WHEN $2 <> '' THEN set_config('idle_in_transaction_session_timeout', $2, true) END AS idle_timeout,
                pg_current_xact_id()::text AS xid, pg_backend_pid() AS pid,
                pg_try_advisory_xact_lock_shared($3::int, $4::int) AS locked
           FROM (SELECT current_setting('lock_timeout') AS previous OFFSET 0) AS s`,
        [`${lockTimeoutMs}ms`, idleMs > 0 ? `${idleMs}ms` : '', LIFETIME_LOCK_SPACE, lifetimeLockKey(names.receiptKey, names.epoch)],
      );
      trace = { xid: String(prepared!['xid']), pid: Number(prepared!['pid']) };
      if (prepared!['locked'] !== true) throw refuse('taken_over', new Error('a takeover holds the lifetime while it decides'));
      if (names.confirm) {
        try {
          await names.confirm();
        } catch (error) {
          throw refuse('not_confirmed', error);
        }
      }
      try {
        // The insert waits on another attempt's uncommitted row; lock_timeout
        // goes back to the session's own value in the same statement, so the
        // tool's statements run under the setting they would without us.
        await query(
          `WITH claimed AS (INSERT INTO ${table} (receipt_key, epoch, attempt, started_at) VALUES ($1, $2, $3, now()) RETURNING 1)
           SELECT set_config('lock_timeout', $4, true) FROM claimed`,
          [names.receiptKey, names.epoch, names.attempt, String(prepared!['previous'])],
        );
      } catch (error) {
        const state = sqlState(error);
        if (state === SQLSTATE.uniqueViolation) throw refuse('lost_race', error);
        // A statement_timeout below lockTimeoutMs ends the same wait: whoever holds the row may still commit.
        if (state === SQLSTATE.lockNotAvailable || state === SQLSTATE.queryCanceled) throw refuse('contended', error);
        throw refuse('database_error', error);
      }
      let result: unknown;
      try {
        result = await tool(tx);
      } catch (error) {
        // The connection lost under the tool's own statement is the database's failure, not the tool's.
        throw refuse((await connectionLost(query, error)) ? 'database_error' : 'tool_failed', error);
      }
      try {
        stored = toStoredJson(result, 'the result of a transactional tool');
      } catch (error) {
        throw refuse('result_not_serializable', error);
      }
      const written = await query(
        `UPDATE ${table} SET result = $3::json, finished_at = clock_timestamp()
          WHERE receipt_key = $1 AND epoch = $2 AND attempt = $4 RETURNING 1`,
        [names.receiptKey, names.epoch, stored === NO_VALUE ? null : stored, names.attempt],
      ).catch((error: unknown) => {
        throw refuse('database_error', error);
      });
      if (written.length !== 1) throw refuse('database_error', new Error('the outcome row was not there to take the result'));
      commitSent = true;
    });
  } catch (error) {
    if (refusal !== undefined) return refused(db, names, refusal);
    if (!commitSent || trace === undefined) return notCommitted(names, 'database_error', error);
    return settleLostCommit(db, names, trace, stored!, error, options.settleTimeoutMs ?? 10_000);
  }
  return { status: 'committed', result: fromStoredJson(stored!), attempt: names.attempt };
}

function notCommitted(names: AttemptNames, reason: NotCommittedReason, cause: unknown): TransactionalRun {
  return { status: 'not_committed', error: new TransactionNotCommittedError(names, reason, cause) };
}

/** The transaction rolled back for a known reason; a lost race replays the winner's outcome. */
async function refused(db: TransactionalDatabase<unknown>, names: TransactionalAttempt, refusal: Refusal): Promise<TransactionalRun> {
  if (refusal.reason !== 'lost_race') return notCommitted(names, refusal.reason, refusal.cause);
  try {
    const outcome = await readOutcome(db, names.receiptKey, names.epoch);
    // Gone between the violation and the read: removed by retention, or by hand.
    if (outcome === undefined) return notCommitted(names, 'contended', refusal.cause);
    return { status: 'replay', result: outcome.result, outcome };
  } catch (error) {
    return notCommitted(names, 'contended', error);
  }
}

/**
 * COMMIT was sent and the driver failed: the reply was lost, or the server
 * refused it. The transaction's id says which; asked on another connection.
 */
async function settleLostCommit(
  db: TransactionalDatabase<unknown>,
  names: TransactionalAttempt,
  trace: TransactionTrace,
  stored: string,
  cause: unknown,
  timeoutMs: number,
): Promise<TransactionalRun> {
  const fate = await transactionFate(db, trace, timeoutMs);
  if (fate.fate === 'committed') return { status: 'committed', result: fromStoredJson(stored), attempt: names.attempt };
  if (fate.fate === 'aborted') return notCommitted(names, 'commit_failed', cause);
  return { status: 'outcome_unknown', error: new TransactionOutcomeUnknownError(names, fate.detail, cause) };
}

/**
 * Whether a tool's failure was its transaction's connection going away (a
 * failover, a restart, a terminated backend): its error carries a
 * connection SQLSTATE (class 08, or 57P0x), or it carries none and the
 * connection no longer answers. A statement of the tool's that failed in
 * SQL leaves the connection answering (its transaction aborted: 25P02).
 */
async function connectionLost(query: (text: string, params: readonly unknown[]) => Promise<unknown>, error: unknown): Promise<boolean> {
  const gone = (state: string | undefined) => state !== undefined && (state.startsWith('08') || state.startsWith('57P'));
  const state = sqlState(error);
  if (state !== undefined) return gone(state);
  try {
    await query('SELECT 1', []);
    return false;
  } catch (probe) {
    const probed = sqlState(probe);
    return probed === undefined || gone(probed);
  }
}
