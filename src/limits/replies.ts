/**
 * Reading the limit scripts' replies (see their headers in `lua/limit-*.lua`)
 * into the store's answers; a reply of any other shape is
 * `receipt.unexpected_reply`, never a guess.
 */
import { UnexpectedScriptReplyError } from '../redis/errors.js';
import type { Limit } from './definitions.js';

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
  return { limit: limit.name, per: limit.per, max: limit.max, windowMs: limit.windowMs, ...counts, used, left: Math.max(0, limit.max - used) };
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
export function parseReserve(reply: readonly unknown[], limit: Limit): { code: number; deadlineMs: number; usage: LimitUsage; expired: Expired[] } {
  const [code, nowMs, windowStartMs, resetsAtMs, committed, pending, deadlineMs, n] = numbers('limit-reserve', reply, 0, 8) as [number, ...number[]];
  if (![0, 1, 2].includes(code)) throw new UnexpectedScriptReplyError('limit-reserve', reply);
  const usage = usageOf(limit, { nowMs: nowMs!, windowStartMs: windowStartMs!, resetsAtMs: resetsAtMs!, committed: committed!, pending: pending!, resetAtMs: null });
  return { code, deadlineMs: deadlineMs!, usage, expired: expiredAt('limit-reserve', reply, 8, n!) };
}

/** limit-usage-3.lua's reply. */
export function parseUsage(reply: readonly unknown[], limit: Limit): { usage: LimitUsage; expired: Expired[] } {
  const [nowMs, windowStartMs, resetsAtMs, committed, pending, resetMs, n] = numbers('limit-usage', reply, 0, 7) as number[];
  const usage = usageOf(limit, { nowMs: nowMs!, windowStartMs: windowStartMs!, resetsAtMs: resetsAtMs!, committed: committed!, pending: pending!, resetAtMs: resetMs! < 0 ? null : resetMs! });
  return { usage, expired: expiredAt('limit-usage', reply, 7, n!) };
}

/** limit-reset-3.lua's reply. */
export function parseReset(reply: readonly unknown[], limit: Limit): { usedBefore: number; usage: LimitUsage } {
  const [nowMs, windowStartMs, resetsAtMs, usedBefore, pending] = numbers('limit-reset', reply, 0, 5) as number[];
  if (reply.length !== 5) throw new UnexpectedScriptReplyError('limit-reset', reply);
  const usage = usageOf(limit, { nowMs: nowMs!, windowStartMs: windowStartMs!, resetsAtMs: resetsAtMs!, committed: 0, pending: pending!, resetAtMs: nowMs! });
  return { usedBefore: usedBefore!, usage };
}

/** The code a script replied first, when it is one of `codes`. */
export function codeOf(script: string, reply: readonly unknown[], codes: readonly number[]): number {
  const code = Number(reply[0]);
  if (!codes.includes(code)) throw new UnexpectedScriptReplyError(script, reply);
  return code;
}
