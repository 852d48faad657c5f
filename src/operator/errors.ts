/**
 * Errors an operator meets acting on one receipt, from the CLI or the
 * console: a key that is not a receipt key, a receipt that is gone, a
 * resolution the store refused. Their codes keep the `cli.` area they were
 * born in, so scripts that branch on them keep working.
 */
import { ToolReceiptsError } from '../core/errors.js';

/** The text given as a Redis key is not a receipt key under the prefix in use. Exit code 2. */
export class InvalidReceiptKeyError extends ToolReceiptsError {
  readonly code = 'cli.invalid_receipt_key';
  readonly redisKey: string;

  constructor(redisKey: string, why: string) {
    super(`${JSON.stringify(redisKey)} is not a receipt key: ${why}`);
    this.redisKey = redisKey;
  }
}

/** No receipt exists under the key: never claimed, expired, or a typo. Exit code 1. */
export class ReceiptNotFoundError extends ToolReceiptsError {
  readonly code = 'cli.receipt_not_found';
  readonly redisKey: string;

  constructor(redisKey: string) {
    super(`no receipt exists under ${redisKey} (never claimed, already expired, or a different --prefix or server)`);
    this.redisKey = redisKey;
  }
}

/**
 * The store refused an operator's resolution and wrote nothing: the receipt
 * moved on since the operator looked at it, or it is not ambiguous. `cause`
 * holds the store's `FencedOutError` or `NotAmbiguousError`. Exit code 1.
 */
export class ResolveRefusedError extends ToolReceiptsError {
  readonly code = 'cli.resolve_refused';
  readonly redisKey: string;

  constructor(redisKey: string, message: string, cause: unknown) {
    super(message, { cause });
    this.redisKey = redisKey;
  }
}
