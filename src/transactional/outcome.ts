/**
 * Reading what the database knows about a receipt lifetime: its committed
 * outcome row, for a takeover and for a runner that lost a COMMIT reply; and
 * whether one transaction committed, learned from its transaction id
 * (`pg_xact_status`), for the runner.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { fromStoredJson } from '../redis/receipts/channel.js';
import type { Rows, TransactionalDatabase } from './database.js';

/** A committed outcome row: the one attempt of the lifetime whose transaction committed. */
export interface CommittedOutcome {
  /** The attempt that committed. */
  readonly attempt: number;
  /** The tool's result as stored (the JSON round trip of what it returned); `undefined` when it returned nothing. */
  readonly result: unknown;
  /** When that attempt's transaction started, by the database's clock (ms since the epoch). */
  readonly startedAtMs: number;
  /** When it wrote its result, by the database's clock (ms since the epoch); `null` for a row written by hand without one. */
  readonly finishedAtMs: number | null;
}

/** A column read as text (drivers differ in how they parse numbers and JSON; text they all leave alone). */
function text(value: unknown): string {
  if (typeof value === 'string') return value;
  throw new TypeError(`expected a text column, got ${typeof value}`);
}

const ms = (column: string) => `floor(extract(epoch from ${column}) * 1000)::bigint::text`;

/**
 * The committed outcome of the lifetime `epoch` of `receiptKey`, or
 * `undefined` when none has committed. Reads committed rows only, so it
 * never waits: an attempt whose transaction is still open is invisible, and
 * `undefined` does not mean none will commit. A takeover therefore decides
 * from this only once it has ended every open attempt of the lifetime
 * (`holdLifetime`, which the wrapper uses).
 */
export async function readOutcome(
  db: TransactionalDatabase<unknown>,
  receiptKey: string,
  epoch: string,
): Promise<CommittedOutcome | undefined> {
  return selectOutcome((text, params) => db.driver.query(text, params), db.outcomes.qualified, receiptKey, epoch);
}

/** {@link readOutcome} through `query`: on its own connection, or inside a transaction that holds one. */
export async function selectOutcome(
  query: (text: string, params: readonly unknown[]) => Promise<Rows>,
  table: string,
  receiptKey: string,
  epoch: string,
): Promise<CommittedOutcome | undefined> {
  const rows = await query(
    `SELECT attempt::text AS attempt, result::text AS result, ${ms('started_at')} AS started_at_ms, ${ms('finished_at')} AS finished_at_ms
       FROM ${table} WHERE receipt_key = $1 AND epoch = $2`,
    [receiptKey, epoch],
  );
  const row = rows[0];
  if (row === undefined) return undefined;
  return {
    attempt: Number(text(row['attempt'])),
    result: row['result'] === null ? undefined : fromStoredJson(text(row['result'])),
    startedAtMs: Number(text(row['started_at_ms'])),
    finishedAtMs: row['finished_at_ms'] === null ? null : Number(text(row['finished_at_ms'])),
  };
}

/** Where an attempt's transaction ran, captured inside it so its fate can be asked for afterwards. */
export interface TransactionTrace {
  /** `pg_current_xact_id()` as text. */
  readonly xid: string;
  /** `pg_backend_pid()` of the connection it ran on. */
  readonly pid: number;
}

/** What the database says of a transaction: `unknown` when it could not be asked, or it would not end, in time. */
export type TransactionFate =
  | { readonly fate: 'committed' }
  | { readonly fate: 'aborted' }
  | { readonly fate: 'unknown'; readonly detail: string; readonly cause?: unknown };

const POLL_MS = 100;

/**
 * Asks, on a connection other than the transaction's, whether the
 * transaction `trace` names committed. While it is still in progress (its
 * connection is lost to us, but the server has not noticed yet) its backend
 * is terminated, found by pid and transaction id together so no other
 * session can be hit: a transaction that never got its COMMIT then aborts,
 * and one that did has already committed. Asks again until `timeoutMs` has
 * passed (the server may be restarting).
 */
export async function transactionFate(
  db: TransactionalDatabase<unknown>,
  trace: TransactionTrace,
  timeoutMs: number,
): Promise<TransactionFate> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  let last = 'the database was not asked';
  for (;;) {
    try {
      const rows = await db.driver.query('SELECT pg_xact_status($1::xid8) AS status', [trace.xid]);
      const status = rows[0]?.['status'];
      if (status === 'committed') return { fate: 'committed' };
      if (status === 'aborted') return { fate: 'aborted' };
      if (status === 'in progress') {
        last = 'the transaction was still open';
        await db.driver.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE pid = $1 AND backend_xid::text::bigint = ($2::xid8::text::numeric % 4294967296)::bigint`,
          [trace.pid, trace.xid],
        );
      } else {
        // NULL: the id is too old for the commit log (not within seconds of running it).
        return { fate: 'unknown', detail: 'the database no longer knows the transaction id' };
      }
    } catch (error) {
      lastError = error;
      last = `the database could not be asked: ${error instanceof Error ? error.message : String(error)}`;
    }
    if (Date.now() + POLL_MS > deadline) return { fate: 'unknown', detail: last, cause: lastError };
    await sleep(POLL_MS);
  }
}
