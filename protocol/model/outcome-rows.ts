/**
 * The transactional outcome rows on PostgreSQL, as the model sees them: one
 * row per lifetime of a call, unique on (receipt key, epoch), inserted first
 * in the attempt's transaction (src/transactional/run.ts). An uncommitted
 * row is invisible to reads and makes another insert wait; a commit makes
 * it visible, and a rollback, a killed connection or a terminated backend
 * takes it away.
 */
import type { OutcomeRow, ProtocolState } from './state.js';

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
