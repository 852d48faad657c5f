/**
 * The base error class every typed error extends, and how a value is described
 * in an error message.
 */
import type { ToolReceiptsErrorCode } from './error-codes.js';

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
