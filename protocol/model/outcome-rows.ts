/**
 * PostgreSQL as the transactional tools meet it: one outcome row per
 * lifetime of a call, unique on (receipt key, epoch), inserted first in the
 * attempt's transaction (src/transactional/run.ts); and the lifetime's
 * advisory lock (src/transactional/takeover.ts), which every attempt holds
 * shared from its first statement and a takeover takes exclusively once it
 * has ended the sessions holding it. An uncommitted row is invisible to
 * reads and makes another insert wait; a commit makes it visible; a
 * rollback, a killed connection or a terminated backend takes it away, and
 * the locks with it. Each worker's side of this is its `txn`.
 */
import type { OutcomeRow, ProtocolState, Worker } from './state.js';

const rowOf = (s: ProtocolState, call: number, epoch: number): OutcomeRow | undefined => s.rows[call]!.find((row) => row.epoch === epoch);

/** What an attempt's insert meets: its row taken, another transaction's row (it waits), or a committed row (unique violation). */
export function insertRow(s: ProtocolState, call: number, epoch: number, attempt: number): 'inserted' | 'blocked' | 'lost_race' {
  const row = rowOf(s, call, epoch);
  if (row === undefined) {
    s.rows[call]!.push({ epoch, state: 'open', attempt });
    return 'inserted';
  }
  return row.state === 'open' ? 'blocked' : 'lost_race';
}

/** The insert would wait: another transaction holds the row uncommitted. */
export const rowHeldOpen = (s: ProtocolState, call: number, epoch: number): boolean => rowOf(s, call, epoch)?.state === 'open';

/** COMMIT of the transaction holding the row. */
export function commitRow(s: ProtocolState, call: number, epoch: number): void {
  rowOf(s, call, epoch)!.state = 'committed';
}

/** The transaction holding the row ended without committing (rollback, connection lost, backend terminated). */
export function dropOpenRow(s: ProtocolState, call: number, epoch: number): void {
  s.rows[call] = s.rows[call]!.filter((row) => row.epoch !== epoch || row.state !== 'open');
}

/** What a read of committed rows sees: the committing attempt, or 0 when none committed. */
export function committedAttempt(s: ProtocolState, call: number, epoch: number): number {
  const row = rowOf(s, call, epoch);
  return row?.state === 'committed' ? row.attempt : 0;
}

/** An attempt's transaction that holds the lifetime's lock shared (and may hold its row). */
const holdsShared = (w: Worker): boolean => w.txn === 'shared' || w.txn === 'inserted' || w.txn === 'blocked';

const ofLifetime = (w: Worker, call: number, epoch: number): boolean => w.call === call && w.epoch === epoch;

/** Whether a takeover holds the lifetime's lock exclusively, or waits for it (then a shared try-lock fails too). */
export function takeoverHolds(s: ProtocolState, call: number, epoch: number): boolean {
  return s.workers.some((w) => ofLifetime(w, call, epoch) && (w.txn === 'queued' || w.txn === 'exclusive'));
}

/**
 * The session of worker `wi` ends (its backend terminated, or the server's
 * idle-in-transaction timeout): its transaction rolls back, its row and
 * locks go, and its next statement fails.
 */
export function endSession(s: ProtocolState, wi: number): void {
  const w = s.workers[wi]!;
  if (w.txn === 'inserted') dropOpenRow(s, w.call, w.epoch);
  w.txn = 'dead';
}

/**
 * Whether takeover `w` holds the lifetime's lock exclusively: it read under
 * it, or its request is granted already, as PostgreSQL grants it the moment
 * no session holds the lock and no earlier request waits.
 */
export function holdsExclusive(s: ProtocolState, w: Worker): boolean {
  if (w.txn === 'exclusive') return true;
  if (w.txn !== 'queued') return false;
  return !s.workers.some(
    (v) =>
      v !== w && ofLifetime(v, w.call, w.epoch) && (holdsShared(v) || v.txn === 'exclusive' || (v.txn === 'queued' && v.ticket < w.ticket)),
  );
}

/**
 * A takeover's sweep (holdLifetime): every session holding the lifetime's
 * lock is ended, in either mode: the attempts holding it shared, and an
 * earlier takeover holding it exclusively (stalled past its reconcile lease).
 */
export function endLockHolders(s: ProtocolState, call: number, epoch: number): void {
  const holders = s.workers.flatMap((w, wi) => (ofLifetime(w, call, epoch) && (holdsShared(w) || holdsExclusive(s, w)) ? [wi] : []));
  for (const wi of holders) endSession(s, wi);
}

/** A session a stopped process leaves idle inside its transaction (its statements done), which the server may end. */
export const idleInTransaction = (s: ProtocolState, w: Worker): boolean =>
  w.txn === 'shared' || w.txn === 'inserted' || holdsExclusive(s, w);
