/**
 * The window math of a limit, pure: fixed windows on one clock (the Redis
 * server's, as `lua/includes/limit-state.lua` computes them), and the
 * sentence a model reads when a call does not fit. Sliding windows and token
 * buckets are judged only on the server (`lua/includes/limit-smooth.lua`).
 *
 * A fixed window resets all at once at a moment known in advance and needs
 * one counter per window; what it gives up: up to twice `max` can run close
 * together across a reset (`max` at the end of one window, `max` at the
 * start of the next). The other kinds do not, at the cost of a record per
 * counted call kept for a window (sliding) or of bursts (bucket).
 */
import type { LimitKind, LimitScope } from './definitions.js';

/** One fixed window of a limit, on the server clock. */
export interface LimitWindow {
  /** Its first millisecond: a multiple of the window's length since 1970-01-01T00:00Z. */
  readonly startMs: number;
  /** Its end, when the count starts again at 0: `startMs + windowMs`. */
  readonly resetsAtMs: number;
}

/**
 * The window of length `windowMs` that holds `nowMs`: windows start at every
 * multiple of their length since the Unix epoch (UTC), so an hour's window
 * resets on the hour and a day's at midnight UTC. Both arguments are whole
 * numbers, `windowMs` at least 1.
 */
export function limitWindow(nowMs: number, windowMs: number): LimitWindow {
  const startMs = nowMs - (nowMs % windowMs);
  return { startMs, resetsAtMs: startMs + windowMs };
}

/** Whether `amount` more fits a window that holds at most `max` and has `used` (committed and pending). */
export function fitsWindow(used: number, amount: number, max: number): boolean {
  return used + amount <= max;
}

/** A duration as a reader says it: `1 day`, `7 days`, `1 h`, `90 min`, `30 s`, `1500 ms`. */
export function durationText(ms: number): string {
  if (ms % 86_400_000 === 0) return ms === 86_400_000 ? '1 day' : `${ms / 86_400_000} days`;
  for (const [size, unit] of [
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1000, 's'],
  ] as const) {
    if (ms % size === 0) return `${ms / size} ${unit}`;
  }
  return `${ms} ms`;
}

/** What a model is told about a limit that refused its call. */
export interface LimitRefusalFacts {
  /** The limit's name. */
  readonly limit: string;
  readonly per: LimitScope;
  readonly max: number;
  readonly windowMs: number;
  /** What the call would have used: 1 for a count, its cost for a budget. */
  readonly amount: number;
  /**
   * `full`: the window is used up until it resets; `held`: shares of calls
   * not yet started fill it, given back by {@link freesAtMs} at the latest if
   * those calls do not run; `exceeds_max`: the call alone costs more than the
   * window holds.
   */
  readonly why: 'full' | 'held' | 'exceeds_max';
  /** When the window resets, on the server clock (ms). */
  readonly resetsAtMs: number;
  /** For `held`: when enough of those shares come back at the latest, on the server clock (ms). */
  readonly freesAtMs?: number;
  /**
   * How the window moves; default `fixed`. For a sliding window or a
   * bucket, {@link resetsAtMs} is when the call may fit at the earliest.
   */
  readonly kind?: LimitKind;
  /** A bucket's burst. */
  readonly burst?: number;
}

const SCOPE_TEXT: Readonly<Record<LimitScope, string>> = { tenant: 'per tenant', run: 'per run', global: 'for all tenants' };

/**
 * The sentence a refused call answers with: which limit, what it allows, and
 * when it resets (an ISO time in UTC), or when the shares of calls not yet
 * started that fill it come back at the latest, or that the call can never fit. Only
 * the team's own words go in (the limit's name and numbers), none of the
 * model's.
 */
export function limitRefusalText(facts: LimitRefusalFacts): string {
  const kind = facts.kind ?? 'fixed';
  const scope = SCOPE_TEXT[facts.per];
  const window = durationText(facts.windowMs);
  const allows =
    kind === 'sliding'
      ? `at most ${facts.max} ${scope} in any ${window}`
      : kind === 'bucket'
        ? `${facts.max} ${scope} every ${window}, at most ${facts.burst ?? facts.max} at once`
        : `at most ${facts.max} ${scope} every ${window}`;
  if (facts.why === 'exceeds_max') {
    return `This call was not run: it would use ${facts.amount} of the limit "${facts.limit}", which allows ${allows}, so it can never fit.`;
  }
  const resets = new Date(facts.resetsAtMs).toISOString();
  if (facts.why === 'held' && facts.freesAtMs !== undefined) {
    const frees = new Date(facts.freesAtMs).toISOString();
    const after = kind === 'fixed' ? ` (the window resets at ${resets})` : '';
    return `This call was not run: the limit "${facts.limit}" (${allows}) is taken by calls that have not started yet; if they do not run, their shares come back by ${frees}${after}.`;
  }
  if (kind !== 'fixed') return `This call was not run: the limit "${facts.limit}" (${allows}) has no room for it before ${resets}.`;
  return `This call was not run: the limit "${facts.limit}" (${allows}) is used up until it resets at ${resets}.`;
}
