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
 * Why a resolve was refused:
 * - `attempt_mismatch`: the attempt typed is not the receipt's (never
 *   reached, or more attempts started since);
 * - `epoch_never_this_receipts`: the epoch typed was never this receipt's
 *   (mistyped, or another receipt's);
 * - `epoch_lifetime_ended`: the epoch typed is of an earlier lifetime of the
 *   call, which expired, and the call was claimed again;
 * - `epoch_differs`: the epoch typed is not this lifetime's, and is of the
 *   older unchecked form, so which of the two cannot be told;
 * - `settled`: the attempt typed is already completed or failed;
 * - `gone`: the receipt no longer exists;
 * - `not_ambiguous`, `contested`: as `NotAmbiguousError`, `ContestedReceiptError`;
 * - `approval_state`: the call awaits approval, or was approved or denied
 *   and has not run: there is no attempt to resolve (approve or deny it);
 * - `moved_on`: anything else the fence refused.
 */
export type ResolveRefusal =
  | 'attempt_mismatch'
  | 'epoch_never_this_receipts'
  | 'epoch_lifetime_ended'
  | 'epoch_differs'
  | 'settled'
  | 'gone'
  | 'not_ambiguous'
  | 'contested'
  | 'approval_state'
  | 'moved_on';

/**
 * The store refused an operator's resolution and wrote nothing: what the
 * operator typed does not match the receipt (see {@link ResolveRefusal}), or
 * it is not ambiguous. `cause` holds the store's `FencedOutError`,
 * `NotAmbiguousError` or `ContestedReceiptError`. Exit code 1.
 */
export class ResolveRefusedError extends ToolReceiptsError {
  readonly code = 'cli.resolve_refused';
  readonly redisKey: string;
  /** What differed. */
  readonly reason: ResolveRefusal;

  constructor(redisKey: string, message: string, cause: unknown, reason: ResolveRefusal = 'moved_on') {
    super(message, { cause });
    this.redisKey = redisKey;
    this.reason = reason;
  }
}
