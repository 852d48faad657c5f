/**
 * Errors the `tool-receipts` CLI raises on purpose. Each one is an expected
 * outcome (a typo, a key that is gone, a resolution that lost its fence), so
 * the CLI prints its message as one sentence and exits non-zero, without a
 * stack trace. Scripts branch on `code`, never on the message.
 */
import { ToolReceiptsError } from '../core/errors.js';

/** Bad command line: unknown command or option, a missing or malformed value. Exit code 2. */
export class CliUsageError extends ToolReceiptsError {
  readonly code = 'cli.usage';
  /** The command whose usage was wrong, when one was recognised. */
  readonly command: string | undefined;

  constructor(message: string, command?: string) {
    super(message);
    this.command = command;
  }
}

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

/** The CLI could not reach the Redis server (refused, timed out, bad URL). Exit code 1. */
export class RedisUnavailableError extends ToolReceiptsError {
  readonly code = 'cli.redis_unavailable';
  /** The URL tried, with any password masked. */
  readonly url: string;

  constructor(url: string, detail: string, cause?: unknown) {
    super(`cannot reach Redis at ${url}: ${detail}`, cause === undefined ? undefined : { cause });
    this.url = url;
  }
}
