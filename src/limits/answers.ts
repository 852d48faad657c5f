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
  /** Random, minted per reserve. */
  readonly id: string;
  /** The limit's name. */
  readonly limit: string;
  readonly keys: LimitKeys;
  /** The receipt (Redis key) of the call it pays for. */
  readonly receiptKey: string;
  /** The bindings hash of that call's run. */
  readonly bindingsKey: string;
  /** The receipt field that holds the reservation once bound (`limit:<name>`). */
  readonly bindingField: string;
  /** How long a bind or settle keeps the run's bindings hash, in ms: two windows and the bound. */
  readonly bindingsKeepMs: number;
  /** What it holds of the window: 1, or the call's cost. */
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
      /** `full` until the window resets (or shares are given back); `exceeds_max`: the amount alone is more than `max`. */
      readonly why: 'full' | 'exceeds_max';
      readonly usage: LimitUsage;
      /** When the window allows it, on the server clock: its reset; `null` for `exceeds_max`. */
      readonly retryAtMs: number | null;
      readonly settled: readonly SettledReservation[];
    };

/**
 * What a bind found: `bound` (the attempt runs under it), `revoked` (settled
 * as unused: the attempt must not run under it), `counted` (the receipt's
 * lifetime is already counted by `by`: the attempt runs, this reservation is
 * given back), `not_running` (no running attempt to bind: give it back).
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
  readonly max: number;
  readonly windowMs: number;
  /** The server clock when it was read (ms). */
  readonly nowMs: number;
  readonly windowStartMs: number;
  /** When the window resets and its count starts again at 0. */
  readonly resetsAtMs: number;
  /** Counted as used: reservations whose attempts executed. */
  readonly committed: number;
  /** Held by live reservations (whose calls may be about to execute, or may be given back). */
  readonly pending: number;
  /** `committed + pending`: what a new call must fit beside. */
  readonly used: number;
  /** `max - used`, at least 0. */
  readonly left: number;
  /** When an operator last reset this window, or `null`. */
  readonly resetAtMs: number | null;
}

/** An expired pending reservation a reply reported: its id and its run's bindings hash. */
export interface Expired {
  readonly id: string;
  readonly bindingsKey: string;
}

/** The counts of a window as a script reported them. */
export interface WindowCounts {
  readonly nowMs: number;
  readonly windowStartMs: number;
  readonly resetsAtMs: number;
  readonly committed: number;
  readonly pending: number;
  readonly resetAtMs: number | null;
}

/** {@link LimitUsage} of `limit` from a window's counts. */
export function usageOf(limit: Limit, counts: WindowCounts): LimitUsage {
  const used = counts.committed + counts.pending;
  return {
    limit: limit.name,
    per: limit.per,
    max: limit.max,
    windowMs: limit.windowMs,
    ...counts,
    used,
    left: Math.max(0, limit.max - used),
  };
}

/** The whole numbers at `from` .. `from + count - 1` of `reply`, or the unexpected-reply error. */
function numbers(script: string, reply: readonly unknown[], from: number, count: number): number[] {
  const out = reply.slice(from, from + count).map(Number);
  if (out.length !== count || !out.every(Number.isSafeInteger)) throw new UnexpectedScriptReplyError(script, reply);
  return out;
}

/** The `n` expired pairs at `from` of `reply`. */
function expiredAt(script: string, reply: readonly unknown[], from: number, n: number): Expired[] {
  if (reply.length !== from + 2 * n) throw new UnexpectedScriptReplyError(script, reply);
  const out: Expired[] = [];
  for (let i = from; i < reply.length; i += 2) out.push({ id: String(reply[i]), bindingsKey: String(reply[i + 1]) });
  return out;
}

/** limit-reserve-3.lua's reply. */
export function parseReserve(
  reply: readonly unknown[],
  limit: Limit,
): { code: number; deadlineMs: number; usage: LimitUsage; expired: Expired[] } {
  const [code, nowMs, windowStartMs, resetsAtMs, committed, pending, deadlineMs, n] = numbers('limit-reserve', reply, 0, 8) as [
    number,
    ...number[],
  ];
  if (![0, 1, 2].includes(code)) throw new UnexpectedScriptReplyError('limit-reserve', reply);
  const usage = usageOf(limit, {
    nowMs: nowMs!,
    windowStartMs: windowStartMs!,
    resetsAtMs: resetsAtMs!,
    committed: committed!,
    pending: pending!,
    resetAtMs: null,
  });
  return { code, deadlineMs: deadlineMs!, usage, expired: expiredAt('limit-reserve', reply, 8, n!) };
}

/** limit-usage-3.lua's reply. */
export function parseUsage(reply: readonly unknown[], limit: Limit): { usage: LimitUsage; expired: Expired[] } {
  const [nowMs, windowStartMs, resetsAtMs, committed, pending, resetMs, n] = numbers('limit-usage', reply, 0, 7) as number[];
  const usage = usageOf(limit, {
    nowMs: nowMs!,
    windowStartMs: windowStartMs!,
    resetsAtMs: resetsAtMs!,
    committed: committed!,
    pending: pending!,
    resetAtMs: resetMs! < 0 ? null : resetMs!,
  });
  return { usage, expired: expiredAt('limit-usage', reply, 7, n!) };
}

/** limit-reset-3.lua's reply. */
export function parseReset(reply: readonly unknown[], limit: Limit): { usedBefore: number; usage: LimitUsage } {
  const [nowMs, windowStartMs, resetsAtMs, usedBefore, pending] = numbers('limit-reset', reply, 0, 5) as number[];
  if (reply.length !== 5) throw new UnexpectedScriptReplyError('limit-reset', reply);
  const usage = usageOf(limit, {
    nowMs: nowMs!,
    windowStartMs: windowStartMs!,
    resetsAtMs: resetsAtMs!,
    committed: 0,
    pending: pending!,
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
