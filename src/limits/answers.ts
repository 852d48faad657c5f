/**
 * What a `LimitStore` answers, and the reading of the limit scripts' replies
 * (see their headers in `lua/limit-*.lua`) into those answers; a reply of
 * any other shape is `receipt.unexpected_reply`, never a guess.
 */
import { UnexpectedScriptReplyError } from '../redis/errors.js';
import type { Limit } from './definitions.js';
import type { LimitKeys } from './keys.js';

/** A granted share of one limit's window, for one call. */
export interface LimitReservation {
  /**
   * Random, minted by the first reserve of the call's receipt; a later
   * reserve of the same receipt while it is pending (a redelivery) gets the
   * same one back (see {@link reused}).
   */
  readonly id: string;
  /**
   * Whether another delivery of the call made it (one that died before its
   * claim, or one still on its way): its holders may be several, so none
   * gives it back blindly (`LimitStore.settle` decides on the run's side).
   */
  readonly reused: boolean;
  /** The limit's name. */
  readonly limit: string;
  /** How the limit's window moves: a `sliding` or `bucket` reservation is committed when its attempt ends (docs/limits.md). */
  readonly kind: Limit['kind'];
  readonly keys: LimitKeys;
  /** The receipt (Redis key) of the call it pays for. */
  readonly receiptKey: string;
  /** The bindings hash of that call's run. */
  readonly bindingsKey: string;
  /** The receipt field that holds the reservation once bound (`limit:<name>`). */
  readonly bindingField: string;
  /** How long a bind or settle keeps the run's bindings hash, in ms: two windows and the bound. */
  readonly bindingsKeepMs: number;
  /** What it holds of the window: 1, or the call's cost (as first reserved, when reused). */
  readonly amount: number;
  /** When it may be settled, on the limit's server clock. */
  readonly deadlineMs: number;
  /** The window it counts in. */
  readonly windowStartMs: number;
}

/** What became of an expired reservation when it was settled. */
export interface SettledReservation {
  readonly id: string;
  /** `committed`: an attempt was bound to it, so it counts; `given_back`: none was, and none can be now. */
  readonly outcome: 'committed' | 'given_back';
}

/** A {@link LimitStore.reserve}'s answer. */
export type ReserveResult =
  | {
      readonly granted: true;
      readonly reservation: LimitReservation;
      readonly usage: LimitUsage;
      readonly settled: readonly SettledReservation[];
    }
  | {
      readonly granted: false;
      /**
       * `full` until the window resets; `held`: what is committed leaves room,
       * and reservations of calls not yet started fill it, to be given back
       * by `retryAtMs` at the latest if those calls do not run; `exceeds_max`:
       * the amount alone is more than `max`.
       */
      readonly why: 'full' | 'held' | 'exceeds_max';
      readonly usage: LimitUsage;
      /** When the window may allow it, on the server clock: its reset, or for `held` the deadline that frees enough; `null` for `exceeds_max`. */
      readonly retryAtMs: number | null;
      readonly settled: readonly SettledReservation[];
    };

/**
 * What a bind found: `bound` (the attempt runs under it), `revoked` (settled
 * as unused: the attempt must not run under it), `counted` (the receipt's
 * lifetime is already counted by `by`: the attempt runs; this reservation is
 * given back, unless `by` is its own id, bound by an earlier attempt it was
 * reused from, which then stays counted), `not_running` (no running attempt
 * to bind: give it back).
 */
export type BindResult =
  | { readonly kind: 'bound' }
  | { readonly kind: 'revoked' }
  | { readonly kind: 'counted'; readonly by: string }
  | { readonly kind: 'not_running' };

/** Who reset a count, for the audit log. */
export interface LimitResetBy {
  /** As the tool that resets knows them (a user name, a token's role). */
  readonly actor: string;
  /** `cli`, `console`, or the embedder's own name. */
  readonly source: string;
}

/** One limit's count for one tenant, run or the fleet, in the current window on the server clock. */
export interface LimitUsage {
  /** The limit's name. */
  readonly limit: string;
  readonly per: Limit['per'];
  /** How its window moves: `fixed`, `sliding` or `bucket`. */
  readonly kind: Limit['kind'];
  readonly max: number;
  /** The most that may be used at once: `max`, or a bucket's `burst`. */
  readonly capacity: number;
  readonly windowMs: number;
  /** The server clock when it was read (ms). */
  readonly nowMs: number;
  /** A fixed window's first ms; for the other kinds, `nowMs - windowMs`. */
  readonly windowStartMs: number;
  /**
   * When what is committed is all free again, if nothing more is taken: a
   * fixed window's reset (its count starts again at 0); for a sliding
   * window, when the last unit committed leaves it; for a bucket, when it
   * has refilled. `nowMs` when nothing committed is held.
   */
  readonly resetsAtMs: number;
  /** When the next committed unit frees by time alone, on the server clock; `null` when none is held. */
  readonly nextFreeAtMs: number | null;
  /**
   * Counted as used: reservations whose attempts executed (in a sliding
   * window, in its last `windowMs`; in a bucket, the units not yet refilled).
   */
  readonly committed: number;
  /** Held by live reservations (whose calls may be about to execute, or may be given back). */
  readonly pending: number;
  /**
   * Held by reservations past their give-back bound, not yet decided (the
   * next reserve or settle commits each whose attempt ran, and gives the
   * others back). Not counted in {@link used} or {@link left}; 0 in a
   * reserve's own answer, which counts them as pending.
   */
  readonly overdue: number;
  /** `committed + pending`: what a new call must fit beside. */
  readonly used: number;
  /** `capacity - used`, at least 0. */
  readonly left: number;
  /** When an operator last reset this window, or `null`. */
  readonly resetAtMs: number | null;
}

/** An expired pending reservation a reply reported: its id, its run's bindings hash and its receipt. */
export interface Expired {
  readonly id: string;
  readonly bindingsKey: string;
  readonly receiptKey: string;
}

/** The counts of a window as a script reported them. */
export interface WindowCounts {
  readonly nowMs: number;
  readonly windowStartMs: number;
  readonly resetsAtMs: number;
  readonly nextFreeAtMs: number | null;
  readonly committed: number;
  readonly pending: number;
  readonly overdue: number;
  readonly resetAtMs: number | null;
}

/** {@link LimitUsage} of `limit` from a window's counts. */
export function usageOf(limit: Limit, counts: WindowCounts): LimitUsage {
  const used = counts.committed + counts.pending;
  const capacity = limit.burst ?? limit.max;
  return {
    limit: limit.name,
    per: limit.per,
    kind: limit.kind,
    max: limit.max,
    capacity,
    windowMs: limit.windowMs,
    ...counts,
    used,
    left: Math.max(0, capacity - used),
  };
}

/** The whole numbers at `from` .. `from + count - 1` of `reply`, or the unexpected-reply error. */
function numbers(script: string, reply: readonly unknown[], from: number, count: number): number[] {
  const out = reply.slice(from, from + count).map(Number);
  if (out.length !== count || !out.every(Number.isSafeInteger)) throw new UnexpectedScriptReplyError(script, reply);
  return out;
}

/** The `n` expired triples at `from` of `reply`. */
function expiredAt(script: string, reply: readonly unknown[], from: number, n: number): Expired[] {
  if (reply.length !== from + 3 * n) throw new UnexpectedScriptReplyError(script, reply);
  const out: Expired[] = [];
  for (let i = from; i < reply.length; i += 3) {
    out.push({ id: String(reply[i]), bindingsKey: String(reply[i + 1]), receiptKey: String(reply[i + 2]) });
  }
  return out;
}

/** What limit-reserve-3.lua answered. */
export interface ReserveReply {
  readonly code: number;
  /** The reservation granted ('' unless code 1), and whether a delivery of the same call made it. */
  readonly id: string;
  readonly reused: boolean;
  readonly deadlineMs: number;
  /** For a call that did not fit: when it may, at the earliest (0 otherwise). */
  readonly retryAtMs: number;
  /** For a call that did not fit: whether only pending shares stand in its way at {@link retryAtMs}. */
  readonly held: boolean;
  /** Until when the count's keys are kept. */
  readonly keptUntilMs: number;
  readonly usage: LimitUsage;
  readonly expired: Expired[];
}

/** limit-reserve-3.lua's reply. */
export function parseReserve(reply: readonly unknown[], limit: Limit): ReserveReply {
  const [code, nowMs, windowStartMs, resetsAtMs, committed, pending, deadlineMs] = numbers('limit-reserve', reply, 0, 7) as number[];
  const [reused, retryAtMs, keptUntilMs, held, nextFreeMs, n] = numbers('limit-reserve', reply, 8, 6) as number[];
  if (![0, 1, 2].includes(code!) || ![0, 1].includes(reused!) || ![0, 1].includes(held!))
    throw new UnexpectedScriptReplyError('limit-reserve', reply);
  const usage = usageOf(limit, {
    nowMs: nowMs!,
    windowStartMs: windowStartMs!,
    resetsAtMs: resetsAtMs!,
    nextFreeAtMs: nextFreeMs! > 0 ? nextFreeMs! : null,
    committed: committed!,
    pending: pending!,
    overdue: 0,
    resetAtMs: null,
  });
  return {
    code: code!,
    id: String(reply[7]),
    reused: reused === 1,
    deadlineMs: deadlineMs!,
    retryAtMs: retryAtMs!,
    held: held === 1,
    keptUntilMs: keptUntilMs!,
    usage,
    expired: expiredAt('limit-reserve', reply, 14, n!),
  };
}

/** limit-usage-3.lua's reply. */
export function parseUsage(reply: readonly unknown[], limit: Limit): { usage: LimitUsage; expired: Expired[] } {
  const [nowMs, windowStartMs, resetsAtMs, committed, pending, overdue, resetMs, nextFreeMs, n] = numbers(
    'limit-usage',
    reply,
    0,
    9,
  ) as number[];
  const usage = usageOf(limit, {
    nowMs: nowMs!,
    windowStartMs: windowStartMs!,
    resetsAtMs: resetsAtMs!,
    nextFreeAtMs: nextFreeMs! > 0 ? nextFreeMs! : null,
    committed: committed!,
    pending: pending!,
    overdue: overdue!,
    resetAtMs: resetMs! < 0 ? null : resetMs!,
  });
  return { usage, expired: expiredAt('limit-usage', reply, 9, n!) };
}

/** limit-reset-3.lua's reply. */
export function parseReset(reply: readonly unknown[], limit: Limit): { usedBefore: number; usage: LimitUsage } {
  const [nowMs, windowStartMs, resetsAtMs, usedBefore, pending] = numbers('limit-reset', reply, 0, 5) as number[];
  if (reply.length !== 5) throw new UnexpectedScriptReplyError('limit-reset', reply);
  const usage = usageOf(limit, {
    nowMs: nowMs!,
    windowStartMs: windowStartMs!,
    resetsAtMs: resetsAtMs!,
    nextFreeAtMs: null,
    committed: 0,
    pending: pending!,
    overdue: 0,
    resetAtMs: nowMs!,
  });
  return { usedBefore: usedBefore!, usage };
}

/** The code a script replied first, when it is one of `codes`. */
export function codeOf(script: string, reply: readonly unknown[], codes: readonly number[]): number {
  const code = Number(reply[0]);
  if (!codes.includes(code)) throw new UnexpectedScriptReplyError(script, reply);
  return code;
}
