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

export { InvalidReceiptKeyError, ReceiptNotFoundError, ResolveRefusedError, type ResolveRefusal } from '../operator/errors.js';

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

/** A PostgreSQL command (`migrate`) could not reach the database, or the database refused a statement. Exit code 1. */
export class PostgresCommandError extends ToolReceiptsError {
  readonly code = 'cli.postgres_error';
  /** The URL used, with any password masked. */
  readonly url: string;

  constructor(url: string, cause: unknown) {
    super(`PostgreSQL at ${url} failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.url = url;
  }
}
