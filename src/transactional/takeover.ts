/**
 * The lifetime lock: how a takeover ends an attempt that stalled with its
 * transaction open before it decides from the outcome row, so that attempt
 * can never commit after the decision.
 *
 * Every attempt holds one PostgreSQL advisory lock of its receipt lifetime,
 * shared, from the first statement of its transaction to its end (taken
 * with a try: an attempt that cannot get it rolls back at once). A takeover
 * ends the transaction of every session holding it (`pg_terminate_backend`,
 * on the pids that hold that very lock), then takes the same lock
 * exclusively, which waits until those transactions are gone, and only then
 * reads what committed. It keeps the lock until its decision is recorded,
 * so no attempt of the lifetime can open meanwhile.
 *
 * An attempt that took its lock after the takeover's sweep is fenced
 * elsewhere: it confirms, inside its transaction and before its outcome row,
 * that it still holds its receipt (the wrapper sends a fenced heartbeat),
 * and the receipt has moved on once the decision is recorded. Either the
 * attempt's lock came first, and the takeover ends it, or its confirmation
 * came after the decision, and it rolls back.
 */
import { createHash } from 'node:crypto';
import type { TransactionalDatabase } from './database.js';
import { selectOutcome, type CommittedOutcome } from './outcome.js';

/**
 * The first key of every lifetime lock (the two-key advisory form), so the
 * locks never meet an application's one-key advisory locks, and meet its
 * two-key ones only if it picks this very number.
 */
export const LIFETIME_LOCK_SPACE = 0x74726331;

/** The second key: 32 bits of the lifetime's digest, as the signed integer PostgreSQL's advisory functions take. */
export function lifetimeLockKey(receiptKey: string, epoch: string): number {
  // The pair as JSON, so no two pairs make the same text.
  return createHash('sha256')
    .update(JSON.stringify([receiptKey, epoch]))
    .digest()
    .readInt32BE(0);
}

/** A transaction a takeover ended: the backend that held the lifetime's lock, and its transaction id. */
export interface EndedAttempt {
  readonly pid: number;
  /** `backend_xid` as text; `null` when the session had written nothing yet. */
  readonly xid: string | null;
}

/** What a takeover found once no attempt of the lifetime could still commit. */
export interface LifetimeFindings {
  /** The committed outcome row, or `undefined` when none committed. */
  readonly outcome: CommittedOutcome | undefined;
  /** The open transactions it ended first (usually none: a stalled attempt's, when one was). */
  readonly ended: readonly EndedAttempt[];
}

/** How long a takeover waits for the lock; how long its own transaction may sit idle (while it records its decision). */
export interface LifetimeHoldOptions {
  readonly lockTimeoutMs: number;
  readonly idleInTransactionTimeoutMs: number;
}

/**
 * Ends every open transaction of the lifetime `epoch` of `receiptKey`,
 * waits for them to be gone, reads the committed outcome row, and runs
 * `decide` with what it found while still holding the lifetime's lock; the
 * lock goes when `decide` settles. Rejects with the database's error when
 * it cannot (a role that may not end the other session, the lock not had
 * within `lockTimeoutMs`, the database unreachable): nothing was decided.
 */
export async function holdLifetime<T>(
  db: TransactionalDatabase<unknown>,
  receiptKey: string,
  epoch: string,
  decide: (found: LifetimeFindings) => Promise<T>,
  options: LifetimeHoldOptions,
): Promise<T> {
  const key = lifetimeLockKey(receiptKey, epoch);
  return db.driver.transaction('read committed', async ({ query }) => {
    await query(`SELECT set_config('lock_timeout', $1, true), set_config('idle_in_transaction_session_timeout', $2, true)`, [
      `${options.lockTimeoutMs}ms`,
      `${options.idleInTransactionTimeoutMs}ms`,
    ]);
    // The sessions holding this very lock, each ended in the statement that found it holding the lock.
    const ended = await query(
      `SELECT a.pid, a.backend_xid::text AS xid, pg_terminate_backend(a.pid) AS ended
         FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.pid <> pg_backend_pid()
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND l.classid = $1::bigint::oid AND l.objid = ($2::bigint & 4294967295)::oid`,
      [LIFETIME_LOCK_SPACE, key],
    );
    // Granted once every ended transaction is gone (committed before the signal, or rolled back by it).
    await query('SELECT pg_advisory_xact_lock($1::int, $2::int)', [LIFETIME_LOCK_SPACE, key]);
    const outcome = await selectOutcome(query, db.outcomes.qualified, receiptKey, epoch);
    return decide({
      outcome,
      ended: ended.map((row) => ({ pid: Number(row['pid']), xid: row['xid'] === null ? null : String(row['xid']) })),
    });
  });
}
