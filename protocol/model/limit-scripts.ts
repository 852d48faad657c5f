/**
 * The limit scripts of lua/ as transitions of the model, for one limit of
 * `max` calls in one window (the window never resets within the bound):
 * reserve on the limit's slot, bind and unbind on the run's, settle on the
 * run's, commit and release on the limit's (docs/limits.md walks through
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
  readonly expired: readonly number[];
}

/** Pending reservations whose deadline has passed, oldest id first (the model's stand-in for the due order). */
function expiredReservations(s: ProtocolState): number[] {
  return s.limit.reservations
    .filter((r) => r.state === 'pending' && r.deadline === 0)
    .map((r) => r.id)
    .sort((a, b) => a - b);
}

/**
 * limit-reserve-3.lua for the call's reservation under `lifetime` (its id
 * names the call and the lifetime; `fresh` is an id never seen before): one
 * already recorded is granted again, and nothing is written for it.
 */
export function limitReserve(s: ProtocolState, ctx: ScriptContext, call: number, lifetime: number | 'fresh'): ReserveAnswer {
  const expired = expiredReservations(s);
  const known = lifetime === 'fresh' ? undefined : s.limit.reservations.find((r) => r.call === call && r.lifetime === lifetime);
  if (known !== undefined) return { granted: true, id: known.id, expired };
  if (s.limit.used + s.limit.pending + 1 > ctx.scenario.limitMax) return { granted: false, id: 0, expired };
  const id = s.nextReservation++;
  const named = lifetime === 'fresh' ? -id : lifetime;
  s.limit.reservations.push({ id, call, lifetime: named, state: 'pending', deadline: ctx.scenario.ticks.reservation });
  s.limit.pending += 1;
  return { granted: true, id, expired };
}

const recordOf = (s: ProtocolState, id: number): Reservation | undefined => s.limit.reservations.find((r) => r.id === id);

/** limit-commit-3.lua: 1 committed, 2 committed already, 0 unknown (given back). */
export function limitCommit(s: ProtocolState, id: number): number {
  const record = recordOf(s, id);
  if (record === undefined) return 0;
  if (record.state === 'committed') return 2;
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
    s.limit.pending -= 1;
    return 1;
  }
  s.limit.used -= 1;
  return 2;
}

/** limit-settle-1.lua: 1 bound (commit it), 0 revoked now, 2 revoked already (give it back either way). */
export function limitSettle(s: ProtocolState, id: number): number {
  const value = s.limit.bindings.get(id);
  if (value === REVOKED) return 2;
  if (value !== undefined) return 1;
  s.limit.bindings.set(id, REVOKED);
  return 0;
}

/** limit-bind-2.lua: 1 bound, 0 revoked, 2 counted already by another reservation, 3 no running attempt; -1 corrupt. */
export function limitBind(s: ProtocolState, call: number, id: number): number {
  const r = s.receipts[call]!;
  if (r.status === 'awaiting' || r.status === 'approved' || r.status === 'denied') return -1;
  const value = s.limit.bindings.get(id);
  if (value === REVOKED) return 0;
  if (value === call) return 1;
  if (r.status !== 'running') return 3;
  if (r.limitHolder !== 0 && r.limitHolder !== id) {
    s.limit.bindings.set(id, REVOKED);
    return 2;
  }
  r.limitHolder = id;
  s.limit.bindings.set(id, call);
  return 1;
}

/** limit-unbind-2.lua: 1 it was bound to the receipt (taken off), 0 not; revoked either way. -1 corrupt. */
export function limitUnbind(s: ProtocolState, call: number, id: number): number {
  const r = s.receipts[call]!;
  if (r.status === 'awaiting' || r.status === 'approved' || r.status === 'denied') return -1;
  let code = 0;
  if (r.limitHolder === id) {
    r.limitHolder = 0;
    code = 1;
  }
  s.limit.bindings.set(id, REVOKED);
  return code;
}
