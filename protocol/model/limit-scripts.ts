/**
 * The limit scripts of lua/ as transitions of the model, for one limit of
 * `max` calls in one window (the window never resets within the bound):
 * reserve on the limit's slot, bind and unbind on the run's, settle on the
 * run's (with the receipt), commit and release on the limit's (docs/limits.md walks through
 * the protocol). Ids are small numbers standing for the reservation ids.
 */
import type { ProtocolState, Reservation } from './state.js';
import type { ScriptContext } from './receipt-scripts.js';

/** A binding that can never be bound again (`revoked` in the run's bindings hash). */
export const REVOKED = -1;

/** limit-reserve-3.lua's answer: `granted` (under `id`), and the expired pending reservations it reports for settling. */
export interface ReserveAnswer {
  readonly granted: boolean;
  readonly id: number;
  /** The receipt's own pending reservation was granted again (a redelivery's). */
  readonly reused: boolean;
  readonly expired: readonly number[];
  /** The call each expired reservation is for (its receipt key, in the real reply). */
  readonly expiredCalls: readonly number[];
}

/** Pending reservations whose deadline has passed, oldest id first (the model's stand-in for the due order). */
function expiredReservations(s: ProtocolState): number[] {
  return s.limit.reservations
    .filter((r) => r.state === 'pending' && r.deadline === 0)
    .map((r) => r.id)
    .sort((a, b) => a - b);
}

/**
 * limit-reserve-3.lua: the receipt's own pending reservation when it has one
 * (`reuse`: as main has it; a redelivery finds its own share), its
 * deadline pushed out to a whole bound from now; else a new one, when it
 * fits. The caller's id is always a new one, so the resend of one id is not modelled.
 */
export function limitReserve(s: ProtocolState, ctx: ScriptContext, call: number, reuse: boolean): ReserveAnswer {
  const expired = expiredReservations(s);
  const expiredCalls = expired.map((id) => recordOf(s, id)!.call);
  const own = reuse ? s.limit.pendingFor[call]! : 0;
  const bound = ctx.scenario.ticks.reservation;
  if (own !== 0) {
    const record = recordOf(s, own)!;
    record.deadline = Math.max(record.deadline, bound);
    return { granted: true, id: own, reused: true, expired, expiredCalls };
  }
  if (s.limit.used + s.limit.pending + 1 > ctx.scenario.limitMax) return { granted: false, id: 0, reused: false, expired, expiredCalls };
  const id = s.nextReservation++;
  s.limit.reservations.push({ id, call, state: 'pending', deadline: bound });
  s.limit.pendingFor[call] = id;
  s.limit.pending += 1;
  return { granted: true, id, reused: false, expired, expiredCalls };
}

/** forgetPending in lua/includes/limit-state.lua: the receipt's pending reservation is pending no more. */
function forgetPending(s: ProtocolState, record: Reservation): void {
  if (s.limit.pendingFor[record.call] === record.id) s.limit.pendingFor[record.call] = 0;
}

const recordOf = (s: ProtocolState, id: number): Reservation | undefined => s.limit.reservations.find((r) => r.id === id);

/** limit-commit-3.lua: 1 committed, 2 committed already, 0 unknown (given back). */
export function limitCommit(s: ProtocolState, id: number): number {
  const record = recordOf(s, id);
  if (record === undefined) return 0;
  if (record.state === 'committed') return 2;
  forgetPending(s, record);
  record.state = 'committed';
  record.deadline = 0;
  s.limit.pending -= 1;
  s.limit.used += 1;
  return 1;
}

/** limit-release-3.lua: 1 a pending one given back, 2 a committed one, 0 unknown. */
export function limitRelease(s: ProtocolState, id: number): number {
  const record = recordOf(s, id);
  if (record === undefined) return 0;
  s.limit.reservations = s.limit.reservations.filter((r) => r.id !== id);
  if (record.state === 'pending') {
    forgetPending(s, record);
    s.limit.pending -= 1;
    return 1;
  }
  s.limit.used -= 1;
  return 2;
}

/**
 * limit-settle-2.lua, for a reservation of `call`'s receipt its holder will
 * not bind: 1 bound (commit it), also when bound here because the receipt
 * has a running attempt no reservation counts yet (claimed, its worker dead
 * before its bind); 0 revoked now, 2 revoked already (give it back).
 */
export function limitSettle(s: ProtocolState, id: number, call: number): number {
  const value = s.limit.bindings.get(id);
  if (value === REVOKED) return 2;
  if (value !== undefined) return 1;
  const r = s.receipts[call]!;
  if (r.status === 'running' && r.limitHolder === 0) {
    r.limitHolder = id;
    r.limitAttempt = r.attempts;
    s.limit.bindings.set(id, call);
    return 1;
  }
  s.limit.bindings.set(id, REVOKED);
  return 0;
}

/**
 * limit-bind-2.lua: 1 bound (now, or already for this attempt), 0 revoked,
 * 2 counted already (by another reservation, or by this one, bound for an
 * earlier attempt), 3 no running attempt; -1 corrupt.
 */
export function limitBind(s: ProtocolState, call: number, id: number): number {
  const r = s.receipts[call]!;
  if (r.status === 'awaiting' || r.status === 'approved' || r.status === 'denied') return -1;
  const value = s.limit.bindings.get(id);
  if (value === REVOKED) return 0;
  if (value === call) return r.limitAttempt === r.attempts ? 1 : 2;
  if (r.status !== 'running') return 3;
  if (r.limitHolder !== 0 && r.limitHolder !== id) {
    s.limit.bindings.set(id, REVOKED);
    return 2;
  }
  r.limitHolder = id;
  r.limitAttempt = r.attempts;
  s.limit.bindings.set(id, call);
  return 1;
}

/**
 * limit-unbind-2.lua, named for the attempt `attempt` of lifetime `epoch`:
 * 1 it was bound to the receipt (taken off), 0 not, revoked either way; 2
 * the receipt moved on past that attempt, or the id is bound for another
 * attempt (nothing written). -1 corrupt.
 */
export function limitUnbind(s: ProtocolState, call: number, id: number, attempt: number, epoch: number): number {
  const r = s.receipts[call]!;
  if (r.status === 'awaiting' || r.status === 'approved' || r.status === 'denied') return -1;
  if (r.status !== 'absent' && (r.attempts !== attempt || r.epoch !== epoch)) return 2;
  if (r.status !== 'absent' && r.limitHolder === id && r.limitAttempt !== attempt) return 2;
  let code = 0;
  if (r.limitHolder === id) {
    r.limitHolder = 0;
    r.limitAttempt = 0;
    code = 1;
  }
  s.limit.bindings.set(id, REVOKED);
  return code;
}
