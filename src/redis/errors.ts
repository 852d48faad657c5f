/**
 * Errors thrown by the Redis receipt and breaker stores. Branch on `code`.
 */
import { ToolReceiptsError } from '../core/errors.js';

/** Status of a receipt as stored in its `status` field. */
export type ReceiptStatus = 'running' | 'completed' | 'failed';

/** What a rejected write found in the receipt instead of the attempt it expected. */
export interface ObservedFence {
  readonly status: ReceiptStatus;
  readonly attempts: number;
}

/**
 * A write by an attempt that no longer owns the receipt: it was reclaimed by a
 * later attempt, settled, resolved by an operator, or it expired. The write did
 * not happen. `observed` is `null` when no receipt exists under the key.
 */
export class FencedOutError extends ToolReceiptsError {
  readonly code = 'receipt.fenced_out';
  readonly redisKey: string;
  readonly attempt: number;
  readonly observed: ObservedFence | null;

  constructor(redisKey: string, attempt: number, observed: ObservedFence | null, operation: string) {
    const found = observed
      ? `the receipt is ${observed.status} at attempt ${observed.attempts}`
      : 'no receipt exists (never claimed, or expired)';
    super(`${operation} by attempt ${attempt} was fenced out of ${redisKey}: ${found}`);
    this.redisKey = redisKey;
    this.attempt = attempt;
    this.observed = observed;
  }
}

/**
 * An operator tried to resolve a receipt that is not ambiguous: its lease is
 * still live, or its effect is resumable and nobody found it ambiguous. Nothing
 * was written.
 */
export class NotAmbiguousError extends ToolReceiptsError {
  readonly code = 'receipt.not_ambiguous';
  readonly redisKey: string;
  readonly observed: ObservedFence;

  constructor(redisKey: string, observed: ObservedFence, why: string) {
    super(`${redisKey} is not ambiguous (${observed.status} at attempt ${observed.attempts}): ${why}`);
    this.redisKey = redisKey;
    this.observed = observed;
  }
}

/**
 * A result, step value or failure cannot be stored as JSON without loss
 * (a function, a symbol, a `BigInt`, a `Map`, a `Set`, a non-finite number or a
 * cycle). Thrown before anything is written.
 */
export class ReceiptValueNotSerializableError extends ToolReceiptsError {
  readonly code = 'receipt.not_serializable';
  readonly what: string;

  constructor(what: string, detail: string, options?: { cause?: unknown }) {
    super(`${what} cannot be stored as JSON: ${detail}`, options);
    this.what = what;
  }
}

/** An argument outside what the store accepts (a non-positive attempt or lease, an empty step name…). */
export class InvalidReceiptInputError extends ToolReceiptsError {
  readonly code = 'receipt.invalid_input';
}

/**
 * A script returned something this version of the package does not
 * understand: usually a script file from another version loaded under the same
 * name, or a receipt hash edited by hand.
 */
export class UnexpectedScriptReplyError extends ToolReceiptsError {
  readonly code = 'receipt.unexpected_reply';
  readonly script: string;

  constructor(script: string, reply: unknown) {
    super(`script ${script} returned an unexpected reply: ${safeText(reply)}`);
    this.script = script;
  }
}

function safeText(value: unknown): string {
  try {
    return JSON.stringify(value)?.slice(0, 200) ?? String(value);
  } catch {
    return String(value);
  }
}
