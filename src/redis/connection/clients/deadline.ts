/**
 * What the adapters know of a command a client did not answer: that the
 * client refused it, or took it back, before writing it to its socket (it
 * never reached Redis, so it did not run), or that it got no reply within
 * the deadline of the connection a store made. `../unreachable.ts` turns
 * both into the typed errors the stores throw.
 */

/**
 * A command the client never wrote to its socket: refused (closed client,
 * offline queue disabled, given up after its reconnects) or taken back from
 * its queue. It never reached Redis. One per command, even when the client
 * rejected many with one error object: that object may also have rejected
 * commands that were written.
 */
export class CommandNotSentError extends Error {
  override readonly cause: Error;

  constructor(cause: Error) {
    super(cause.message, { cause });
    this.name = 'CommandNotSentError';
    this.cause = cause;
  }
}

/** A command that got no reply within the connection's deadline (a store's `commandTimeoutMs`). */
export class CommandDeadlineError extends Error {
  constructor(
    readonly deadlineMs: number,
    /** Whether the client had a connection to write it on when the deadline passed. */
    readonly connected: boolean,
    written: boolean,
  ) {
    super(
      written
        ? `no reply within ${deadlineMs} ms`
        : `not sent within ${deadlineMs} ms: ${connected ? 'the connection took no more writes' : 'the client had no connection to Redis'}`,
    );
    this.name = 'CommandDeadlineError';
  }
}
