/**
 * Redis not answering: a command that timed out (the store's
 * `commandTimeoutMs`, or ioredis' `commandTimeout`) or whose connection was
 * lost. Then the command may or may not have run on the server, so its reply
 * is unknown; unless the client never sent it (refused, or held back and
 * dropped, before writing it), and then it did not run. The stores turn what
 * the client throws into {@link RedisTimeoutError} or
 * {@link RedisConnectionLostError}, naming the receipt, its tool and the step
 * that was cut off, and whether the command was sent.
 */
import { ToolReceiptsError } from '../../core/errors.js';
import { CommandDeadlineError, CommandNotSentError } from './clients/deadline.js';
import { decodeKeyComponent } from '../keys.js';

/** What became of one claim whose reply was lost. */
export interface LostClaimRelease {
  readonly redisKey: string;
  /** The attempt the claim would have started. */
  readonly attempt: number;
  /**
   * `released`: it had landed and is now failed `neverStarted`; `notLanded`:
   * Redis holds no attempt of this claim (it never ran, or the receipt moved
   * on); `unknown`: Redis did not answer any try (or refused the release),
   * so the attempt, if it landed, is left for its lease to lapse.
   */
  readonly outcome: 'released' | 'notLanded' | 'unknown';
}

/** What a store was doing when Redis stopped answering. */
export interface RedisStep {
  /** The receipt (or other key) the command was about. */
  readonly redisKey: string;
  /** The step: `claim`, `reclaim`, `complete`, `completeClaim`, `claimGroup`, `fail`, `heartbeat`, `recordStep`, … */
  readonly step: string;
}

/** Redis did not answer a store's command in time, or the connection carrying it was lost. */
export abstract class RedisUnreachableError extends ToolReceiptsError {
  readonly redisKey: string;
  readonly step: string;
  /** The tool the receipt belongs to, when `redisKey` is a receipt's. */
  readonly tool: string | undefined;
  /**
   * For a claim (or a write carrying claims): what became of each attempt it
   * may have started, once released (see `release-lost-claim-3.lua`).
   */
  readonly releases: LostClaimRelease[] = [];
  /**
   * `false` when the client never sent the command (it refused it, or held
   * it back and dropped it, before writing it to its socket): it did not
   * run, so a claim has nothing to release. `true` when it may have reached
   * Redis, whose reply is then unknown.
   */
  readonly sent: boolean;

  constructor(what: string, where: RedisStep, cause: unknown, sent: boolean) {
    const tool = toolOfReceiptKey(where.redisKey);
    const text = cause instanceof Error ? cause.message : String(cause);
    const fate = sent ? `${what} (${text}); whether it ran is unknown` : `was not sent (${text}), so it did not run`;
    super(`${where.step} of ${where.redisKey}${tool === undefined ? '' : ` (tool ${tool})`} ${fate}`, { cause });
    this.redisKey = where.redisKey;
    this.step = where.step;
    this.tool = tool;
    this.sent = sent;
  }
}

/**
 * A store's command got no reply within the store's `commandTimeoutMs` (or
 * the connection's own `commandTimeout`). Retryable.
 */
export class RedisTimeoutError extends RedisUnreachableError {
  readonly code = 'redis.timeout';
  constructor(where: RedisStep, cause: unknown, sent = true) {
    super('timed out', where, cause, sent);
  }
}

/** The connection carrying a store's command was closed, refused or gave up retrying. Retryable. */
export class RedisConnectionLostError extends RedisUnreachableError {
  readonly code = 'redis.unavailable';
  constructor(where: RedisStep, cause: unknown, sent = true) {
    super('lost its connection', where, cause, sent);
  }
}

/**
 * The receipts Redis could not be used when a processor checked it at start
 * (`processor.ready()`): it did not answer a PING (never reached, or no reply
 * within the deadline), or refused to load the package's Lua scripts.
 * Nothing was claimed or run. `address` names where the client connects, any
 * password masked.
 */
export class ReceiptsRedisUnavailableError extends ToolReceiptsError {
  readonly code = 'redis.unavailable';
  /** Where the client connects (a URL, password masked); `undefined` when it does not say. */
  readonly address: string | undefined;

  constructor(address: string | undefined, problem: string, cause: unknown) {
    super(`the receipts Redis ${address === undefined ? '(its client does not say where)' : `at ${address}`} ${problem}`, { cause });
    this.address = address;
  }
}

const CONNECTION_CODES = /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN|CLUSTERDOWN)$/;
const CONNECTION_MESSAGES =
  /^(Connection is closed\.|Stream isn't writeable|Reached the max retries per request limit|None of startup nodes is available|Cluster isn't ready|Failed to refresh slots cache|CLUSTERDOWN|LOADING|MASTERDOWN|TRYAGAIN)/;

/** node-redis' error classes (5 and 6) for a command that got no reply in time. */
const NODE_REDIS_TIMEOUTS = new Set([
  'TimeoutError',
  'CommandTimeoutDuringMaintenanceError',
  'SocketTimeoutDuringMaintenanceError',
  'SocketTimeoutError',
]);
/** node-redis' error classes for a connection that is closed, lost or cannot be made. */
const NODE_REDIS_CONNECTION_ERRORS = new Set([
  'ClientClosedError',
  'ClientOfflineError',
  'SocketClosedUnexpectedlyError',
  'ConnectionTimeoutError',
  'RootNodesUnavailableError',
  'DisconnectsClientError',
  'ReconnectStrategyError',
]);

/**
 * The typed error `error` stands for when it says Redis did not answer
 * (ioredis' `Command timed out`, a closed or refused connection, a request
 * that ran out of retries, a cluster or replica not ready); anything else is
 * returned unchanged.
 */
export function unreachableErrorOf(error: unknown, where: RedisStep): unknown {
  if (!(error instanceof Error) || error instanceof ToolReceiptsError) return error;
  // An adapter's word that the client never wrote it; what it failed with is inside.
  const sent = !(error instanceof CommandNotSentError);
  const cause = sent ? error : error.cause;
  if (cause instanceof CommandDeadlineError) {
    return cause.connected ? new RedisTimeoutError(where, cause, sent) : new RedisConnectionLostError(where, cause, sent);
  }
  const kind = cause.constructor.name;
  if (cause.message === 'Command timed out' || NODE_REDIS_TIMEOUTS.has(kind)) return new RedisTimeoutError(where, cause, sent);
  const code = (cause as { code?: unknown }).code;
  if (
    (typeof code === 'string' && CONNECTION_CODES.test(code)) ||
    cause.name === 'MaxRetriesPerRequestError' ||
    NODE_REDIS_CONNECTION_ERRORS.has(kind) ||
    CONNECTION_MESSAGES.test(cause.message)
  ) {
    return new RedisConnectionLostError(where, cause, sent);
  }
  return error;
}

/** The step name of a receipt script: its name in camel case, `complete-claim` → `completeClaim`. */
export function stepOfScript(script: string): string {
  return script.replace(/-(\w)/g, (_, letter: string) => letter.toUpperCase());
}

/** The tool named by a receipt key (`<prefix>:rcpt:{<tenant>|<run>}:<tool>:<argsHash>`), or `undefined` for any other key. */
function toolOfReceiptKey(redisKey: string): string | undefined {
  const match = /:rcpt:\{[^{}]*\}:([^{}:|]*):[^{}:|]*$/.exec(redisKey);
  if (!match) return undefined;
  try {
    return decodeKeyComponent(match[1] ?? '');
  } catch {
    return undefined;
  }
}
