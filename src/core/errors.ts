/**
 * The base error class every typed error extends, and how a value is described
 * in an error message.
 */
import type { ToolReceiptsErrorCode } from './error-codes.js';

/** Errors of another library's class that stand for one of this package's (see {@link carryToolReceiptsError}). */
const carriers = new WeakSet<object>();

/**
 * The base of every error this package throws on purpose.
 *
 * Callers branch on `code`, never on the message: codes are part of the public
 * API and do not change between releases, while messages may be reworded.
 */
export abstract class ToolReceiptsError extends Error {
  /**
   * A stable, dotted identifier such as `canonical_json.cycle`: one of
   * {@link ToolReceiptsErrorCode}, so a `switch` over it can be exhaustive.
   */
  abstract readonly code: ToolReceiptsErrorCode;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }

  /**
   * `error instanceof ToolReceiptsError` holds for the package's errors, and
   * also for an error that must be of another library's class but stands for
   * one of them, with its `code` and the error itself as `cause`: the BullMQ
   * `UnrecoverableError` a job fails with when it must not be retried. A
   * subclass (`instanceof AmbiguousToolCallError`) matches its own instances only.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
    return this === ToolReceiptsError && typeof value === 'object' && value !== null && carriers.has(value);
  }
}

/**
 * Makes `carrier`, an error of another library's class, stand for `error`:
 * it gets `error`'s `code`, keeps `error` as its `cause`, and is a
 * `ToolReceiptsError` to `instanceof` from then on.
 */
export function carryToolReceiptsError<E extends Error>(
  carrier: E,
  error: ToolReceiptsError,
): E & { readonly code: ToolReceiptsErrorCode } {
  Object.assign(carrier, { code: error.code, cause: error });
  carriers.add(carrier);
  return carrier as E & { readonly code: ToolReceiptsErrorCode };
}

/**
 * A URL as an error message may show it: its password masked (`***`), a
 * lone trailing `/` left out; `(an unparseable URL)` for text that is none.
 */
export function maskedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString().replace(/\/$/, '');
  } catch {
    return '(an unparseable URL)';
  }
}

/**
 * A few words naming what a caller passed instead of what was wanted, for
 * error sentences: `undefined`, `null`, `an empty string`, `a number`, … The
 * value itself is never quoted, since it may be a secret.
 */
export function describeValue(value: unknown): string {
  if (value === undefined || value === null) return String(value);
  if (value === '') return 'an empty string';
  const kind = typeof value;
  return kind === 'object' ? 'an object' : `a ${kind}`;
}
