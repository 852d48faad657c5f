/**
 * The kinds of window a limit may have, and the rules between a
 * definition's fields that say which it has: its `max` and `windowMs`,
 * its kind and a bucket's burst, or an in-flight cap (`concurrency`), which
 * takes no window. Pure.
 */
import { InvalidOptionsError } from '../core/options.js';

/**
 * How a limit's window moves: `fixed` resets all at once at every multiple
 * of `windowMs` (up to twice `max` can run close together across a reset);
 * `sliding` never lets any stretch of `windowMs` hold more than `max`;
 * `bucket` is a token bucket (GCRA): up to `burst` at once, then one unit
 * every `windowMs / max`. docs/limits.md compares them.
 */
export type LimitKind = 'fixed' | 'sliding' | 'bucket';

/** Whose calls one count (or one cap) covers: each tenant's, each run's, or everyone's. */
export type LimitScope = 'tenant' | 'run' | 'global';

/** What a call over the limit does: answer the model with a sentence, or wait until the window (or a slot) allows it. */
export type OnLimit = 'refuse' | 'wait';

/**
 * The most `burst × windowMs` may be for a token bucket: its time is kept
 * exactly, in units of `1/max` ms, as whole numbers a Lua script can add
 * without rounding.
 */
export const MAX_BUCKET_SPAN = 2 ** 52;

/** The fields of a definition that {@link windowOf} judges together, each already checked on its own. */
export interface WindowFields {
  readonly max?: number | undefined;
  readonly windowMs?: number | undefined;
  readonly kind?: LimitKind | undefined;
  readonly burst?: number | undefined;
  readonly concurrency?: number | undefined;
}

/**
 * An in-flight cap's `concurrency`, or `undefined` for a definition that
 * gives none (a window). A cap takes no window: `concurrency` given with
 * `max`, `windowMs`, `kind` or `burst` throws `options.invalid` naming
 * `concurrency` (its own rule, a whole number from 1, was checked already).
 */
export function capOf(owner: string, d: WindowFields, at: string): number | undefined {
  if (d.concurrency === undefined) return undefined;
  const windowed = (['max', 'windowMs', 'kind', 'burst'] as const).filter((name) => d[name] !== undefined);
  if (windowed.length > 0) {
    const field = `${at}.concurrency`;
    throw new InvalidOptionsError(
      owner,
      field,
      `\`${field}\` caps calls in flight, not calls per window: give it without ${windowed.map((n) => `\`${n}\``).join(', ')} (two limits of two names for both)`,
    );
  }
  return d.concurrency;
}

/**
 * The rules between a window's fields, after each field passed its own
 * (a definition without `concurrency`: see {@link capOf}): `max` and
 * `windowMs` are required; `burst` belongs to a bucket, whose
 * `burst × windowMs` is bounded. Throws `options.invalid` naming the field
 * at fault (`limits[0].burst`).
 */
export function windowOf(owner: string, d: WindowFields, at: string): { kind: LimitKind; burst: number | undefined } {
  const field = (name: string) => `${at}.${name}`;
  const refuse = (name: string, why: string) => new InvalidOptionsError(owner, field(name), `\`${field(name)}\` ${why}`);
  if (d.max === undefined) throw refuse('max', 'is required');
  if (d.windowMs === undefined) throw refuse('windowMs', 'is required');
  const kind = d.kind ?? 'fixed';
  if (kind !== 'bucket') {
    if (d.burst !== undefined)
      throw refuse('burst', `is a token bucket's (\`kind: 'bucket'\`); this limit's kind is ${JSON.stringify(kind)}`);
    return { kind, burst: undefined };
  }
  const burst = d.burst ?? d.max;
  if (burst * d.windowMs > MAX_BUCKET_SPAN) {
    throw refuse(
      d.burst === undefined ? 'max' : 'burst',
      `times \`windowMs\` is ${burst * d.windowMs}, over 2^52: a bucket counts time exactly in 1/max ms; use a shorter window with a smaller ${d.burst === undefined ? 'max' : 'burst'}`,
    );
  }
  return { kind, burst };
}
