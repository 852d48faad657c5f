/**
 * Errors thrown by the Redis receipt and breaker stores. Branch on `code`.
 */
import { ToolReceiptsError } from '../core/errors.js';

/** Status of a receipt as stored in its `status` field. */
export type ReceiptStatus = 'running' | 'completed' | 'failed';

/**
 * The statuses of a call that needed approval (src/approvals,
 * `lua/includes/approval.lua`): it has not run yet, or never will. Read and
 * shown like any receipt; moved only by the approval scripts, so every other
 * transition refuses them.
 */
export type ApprovalStatus = 'awaiting_approval' | 'approved' | 'denied';

/** A status a receipt may be found in: an ordinary one, or an approval state. */
export type ReceiptRecordStatus = ReceiptStatus | ApprovalStatus;

/**
 * What identifies one attempt of one receipt across all its lifetimes: the
 * attempt number, and the epoch the claim that created the receipt minted.
 * A receipt that expires and is claimed again starts a new lifetime under a
 * new epoch, again at attempt 1, so an attempt number alone could name an
 * attempt of either lifetime; the pair cannot. Every fenced write carries it.
 */
export interface AttemptFence {
  readonly attempt: number;
  /** The lifetime's epoch, as the claim returned it. */
  readonly epoch: string;
}

/** What a rejected write found in the receipt instead of the attempt it expected. */
export interface ObservedFence {
  readonly status: ReceiptRecordStatus;
  readonly attempts: number;
  /** The epoch of the lifetime found (`''` for a receipt written before epochs existed). */
  readonly epoch: string;
}

/**
 * A write by an attempt that no longer owns the receipt: it was reclaimed by a
 * later attempt, settled, resolved by an operator, it expired, or the call was
 * claimed again after expiry (another lifetime, another epoch). The write did
 * not happen. `observed` is `null` when no receipt exists under the key.
 */
export class FencedOutError extends ToolReceiptsError {
  readonly code = 'receipt.fenced_out';
  readonly redisKey: string;
  readonly attempt: number;
  /** The epoch the refused write carried; `undefined` for an operator's resolve without one. */
  readonly epoch: string | undefined;
  readonly observed: ObservedFence | null;

  constructor(redisKey: string, fence: { attempt: number; epoch?: string | undefined }, observed: ObservedFence | null, operation: string) {
    let found = observed
      ? `the receipt is ${observed.status} at attempt ${observed.attempts}`
      : 'no receipt exists (never claimed, or expired)';
    if (observed && fence.epoch !== undefined && observed.epoch !== fence.epoch) {
      found += ' of a later lifetime (the receipt expired and the call was claimed again)';
    }
    super(`${operation} by attempt ${fence.attempt} was fenced out of ${redisKey}: ${found}`);
    this.redisKey = redisKey;
    this.attempt = fence.attempt;
    this.epoch = fence.epoch;
    this.observed = observed;
  }
}

/**
 * A receipt (or its run index or breaker hash) that this package did not
 * write as it is: a key of another Redis type, or a receipt hash without a
 * valid `status` or `attempts` (edited by hand, or by other software sharing
 * the prefix). Nothing was written: a corrupt receipt is never treated as
 * absent (that would run the call again as attempt 1) nor repaired by a
 * guess. Inspect it with `redis-cli`, then delete or fix it.
 */
export class CorruptReceiptError extends ToolReceiptsError {
  readonly code = 'receipt.corrupt';
  /** The key found corrupt. */
  readonly redisKey: string;
  /** What is wrong with it. */
  readonly why: string;

  constructor(redisKey: string, why: string, options?: { cause?: unknown }) {
    super(
      `${redisKey} is corrupt (${why}); nothing was written. Inspect it with redis-cli, then delete or repair it before using this call again`,
      options,
    );
    this.redisKey = redisKey;
    this.why = why;
  }
}

/**
 * The newest receipt layout this release reads, from the `schema` field each
 * receipt stores. A receipt without the field has layout 1, written before
 * layouts were numbered; layout 2 adds fields a release reading only layout 1
 * ignores, and is what an ordinary receipt is written in
 * ({@link ORDINARY_RECEIPT_SCHEMA}). Layout 3 is for a receipt whose status or
 * effect a release reading only layout 2 would misread: that release refuses it
 * ({@link ReceiptVersionError}) instead of guessing, while every ordinary
 * receipt stays readable beside it during a rolling deploy. Layout 4
 * ({@link LEAN_RECEIPT_SCHEMA}) is layout 3 without the fields its key
 * already names, written only where a keyspace opts in (`receiptLayout: 4`).
 * Layout 5 ({@link COMPACT_RECEIPT_SCHEMA}) is layout 4 listed by a short
 * member and with a long result kept in parts, so it stays compact at the
 * server's default listpack limits.
 * The scripts hold the same numbers (`lua/includes/observe-receipt.lua`).
 */
export const RECEIPT_SCHEMA_VERSION = 5;

/**
 * The layout (4) a keyspace with `receiptLayout: 4` creates receipts in:
 * everything layout 3 means, without the fields `tenant`, `run`, `tool` and
 * `args_hash`; readers of this release take them from the receipt's key.
 */
export const LEAN_RECEIPT_SCHEMA = 4;

// The compact layout's number lives with the key layout it changes (the run index's members).
export { COMPACT_RECEIPT_SCHEMA } from './keys.js';

/**
 * The layout a claim that creates an ordinary receipt writes (2): one the
 * previous release reads too. A next attempt keeps a receipt's newer layout.
 */
export const ORDINARY_RECEIPT_SCHEMA = 2;

/**
 * A receipt written by a newer release of this package, in a layout this
 * release does not know (its `schema` field is above
 * {@link RECEIPT_SCHEMA_VERSION}): met during a rolling deploy of a release
 * that changed the layout, or after rolling back past one. Nothing was read
 * into it or written to it, since reading it as this release's layout could
 * misreport its state. Run the call, or the command, with the newer release.
 */
export class ReceiptVersionError extends ToolReceiptsError {
  readonly code = 'receipt.version';
  /** The receipt's Redis key. */
  readonly redisKey: string;
  /** The layout the receipt carries. */
  readonly foundVersion: number;
  /** The newest layout this release reads ({@link RECEIPT_SCHEMA_VERSION}). */
  readonly supportedVersion: number;

  constructor(redisKey: string, foundVersion: number, supportedVersion: number = RECEIPT_SCHEMA_VERSION, options?: { cause?: unknown }) {
    super(
      `${redisKey} was written by a newer release of bullmq-tool-receipts (receipt schema ${foundVersion}; this release reads up ` +
        `to ${supportedVersion}); nothing was read or written. Handle it with the newer release: finish the rollout, or keep ` +
        'a worker of that release running while its receipts live',
      options,
    );
    this.redisKey = redisKey;
    this.foundVersion = foundVersion;
    this.supportedVersion = supportedVersion;
  }
}

const CORRUPT_REPLY = /^TRC_CORRUPT (.*?): (.*)$/s;
/** The key goes up to the fixed tail, so a key holding ': ' is still read whole. */
const VERSION_REPLY = /^TRC_VERSION (.*): schema (\d+) is newer than (\d+)$/s;

/**
 * The typed error a script's error reply stands for: {@link CorruptReceiptError}
 * for `TRC_CORRUPT <key>: <why>` (or a raw `WRONGTYPE` reply on `redisKey`),
 * {@link ReceiptVersionError} for `TRC_VERSION <key>: schema <n> is newer than
 * <m>`; any other error is returned unchanged.
 */
export function corruptReceiptErrorOf(error: unknown, redisKey: string): unknown {
  if (!(error instanceof Error)) return error;
  const newer = VERSION_REPLY.exec(error.message);
  if (newer) return new ReceiptVersionError(newer[1] ?? redisKey, Number(newer[2]), Number(newer[3]), { cause: error });
  const match = CORRUPT_REPLY.exec(error.message);
  if (match) return new CorruptReceiptError(match[1] ?? redisKey, match[2] ?? 'malformed', { cause: error });
  if (error.message.startsWith('WRONGTYPE')) return new CorruptReceiptError(redisKey, 'a key holds the wrong Redis type', { cause: error });
  return error;
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
 * An operator tried to resolve a receipt whose verdict is contested: a claim
 * reported its attempt ambiguous, but the attempt has heartbeated since, so
 * it is alive and may still settle the receipt itself (a late settle).
 * Nothing was written. Resolve it once the attempt settles (then there is
 * nothing left to resolve) or its lease lapses.
 */
export class ContestedReceiptError extends ToolReceiptsError {
  readonly code = 'receipt.contested';
  readonly redisKey: string;
  readonly observed: ObservedFence;
  /** End of the live lease the attempt renewed, on the server clock. */
  readonly leaseUntilMs: number | null;

  constructor(redisKey: string, observed: ObservedFence, leaseUntilMs: number | null) {
    super(
      `${redisKey} is contested (running at attempt ${observed.attempts}): a claim reported it ambiguous, but the attempt has ` +
        'heartbeated since and may still settle it late; resolve it once it settles or its lease lapses',
    );
    this.redisKey = redisKey;
    this.observed = observed;
    this.leaseUntilMs = leaseUntilMs;
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
