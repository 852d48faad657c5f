/**
 * The shapes the receipt store's methods take and return.
 */
import type { EffectResumability, ReceiptDecision, ReceiptEffect, ReceiptState } from '../../core/decision.js';
import type { ToolCallReceiptKey } from '../../core/identity.js';
import type { AttemptFence, CorruptReceiptError, ReceiptVersionError } from '../errors.js';
import type { AttemptJob } from './reads/record.js';

/** Options of one {@link ReceiptStore.claim}. */
export interface ClaimOptions {
  /**
   * Whether an interrupted attempt may be taken over. Recorded by the first
   * claim; `transactional` decides as `opaque` and marks the receipt as
   * settled from its PostgreSQL outcome row, never by a person.
   */
  effect: ReceiptEffect;
  /** Lease for the attempt this claim may start, in ms. */
  leaseMs?: number;
  /** Worker id for this attempt; default the store's. */
  owner?: string;
  /** The BullMQ job this attempt runs in, recorded as `job:<attempt>` when the claim starts one. */
  job?: AttemptJob;
  /**
   * The caller will try to settle an expired opaque attempt itself (a
   * reconcile, or a keyed re-run): an `ambiguous` decision is then returned
   * without flagging the receipt, with {@link ClaimResult.lostFence}, and the
   * caller flags it with `ReceiptStore.flagAmbiguous` if it cannot settle it.
   */
  settlesExpired?: boolean;
  /**
   * This call needs a person's approval (its approval gate said so): a
   * claim that would create a brand-new lifetime (no receipt: the one the
   * gate answered for expired since) creates nothing and answers with
   * {@link ClaimResult.approvalNeeded}, so the caller passes the gate again.
   */
  needsApproval?: boolean;
  /**
   * Called once with the epoch this claim mints, in the same tick as its
   * claim script is sent and after it: a write sent from here reaches Redis
   * after the claim (same connection, same hash tag), so a caller can send
   * what depends on the claim's outcome without waiting for its answer (a
   * limit's bind, conditioned on the epoch: see lua/limit-bind-2.lua). Not
   * called for a claim answered ahead or in a group, which sends no claim
   * script of its own.
   */
  onSent?: ((epoch: string) => void) | undefined;
}

/**
 * A failure a job recorded that its later deliveries answer again: the
 * error text as stored (cut to 500 characters) and its tier.
 */
export interface StandingFailure {
  readonly error: string;
  readonly tier: 'neutral' | 'destructive';
}

/** What a claim decided, and what it saw. */
export interface ClaimResult {
  readonly decision: ReceiptDecision;
  /** The receipt state the decision was made on (for `execute`, the state before this attempt started). */
  readonly state: ReceiptState;
  /**
   * The attempt now owned by the caller; set when the decision is `execute`
   * and {@link toolRemoval} is not.
   */
  readonly attempt?: number;
  /**
   * The fence of that attempt (its number and the receipt lifetime's epoch);
   * set exactly when {@link attempt} is. Pass it to every later write of the
   * attempt: complete, fail, heartbeat, recordStep.
   */
  readonly fence?: AttemptFence;
  /** The recorded result when the decision is `replay` (absent when the call completed without one). */
  readonly result?: unknown;
  /**
   * For `execute`, the lease just granted; for `wait`, what is left of the
   * other attempt's lease; for `ambiguous`, 0. In ms, on the server clock.
   */
  readonly leaseRemainingMs?: number;
  /**
   * For `wait`: the Redis server's clock (`TIME`, in ms) when the claim read
   * the receipt, so a caller can schedule its return on the server's clock
   * rather than its own.
   */
  readonly serverNowMs?: number;
  /** For `execute`: end of the granted lease on the server clock. */
  readonly leaseUntilMs?: number;
  /** For `ambiguous`: when a claim first found this attempt ambiguous (server clock). */
  readonly ambiguousMs?: number;
  /** For `ambiguous` with `settlesExpired`: the fence (number and epoch) of the attempt that lost its lease. */
  readonly lostFence?: AttemptFence;
  /** The effect the decision was made with (see {@link ReceiptStore.claim}). */
  readonly effect: EffectResumability;
  readonly redisKey: string;
  /**
   * Set, with a decision of `replay`, when the receipt failed and that
   * failure stands: this very BullMQ job recorded it (`ClaimOptions.job`),
   * in a tier the job is never retried for, so its later deliveries answer
   * it again instead of running the tool once more. Nothing was written.
   */
  readonly failure?: StandingFailure;
  /**
   * Set when the run's circuit breaker has removed the tool: its removal
   * reason, read in the same script as the receipt.
   *
   * With a decision of `execute` the store has NOT created, reclaimed or
   * written anything (no receipt, no run-index entry, no lease), `attempt` is
   * unset and `decision.attempt` is only the attempt it would have been: the
   * caller must not run the tool, and has nothing to settle. `replay`, `wait`
   * and `ambiguous` are decided and acted on as usual (an ambiguous receipt
   * may still be flagged), with this field telling the caller the tool is
   * removed.
   */
  readonly toolRemoval?: string;
  /**
   * Set when the claim was made with {@link ClaimOptions.needsApproval} and
   * found no receipt: as with {@link toolRemoval} and a decision of
   * `execute`, the store has created and written nothing, `attempt` is
   * unset, and the caller must not run the tool: the lifetime it would have
   * started was never approved. Pass the approval gate again.
   */
  readonly approvalNeeded?: true;
  /**
   * The tool's streak of consecutive rejections in the run, as the claim read
   * it (0 when none). {@link ReceiptStore.complete} resets a non-zero streak.
   */
  readonly rejectionStreak: number;
}

/**
 * An operator's verdict on an ambiguous receipt, fenced on what the operator
 * saw: `attemptsSeen`, and `epochSeen` when given (the receipt's epoch, which
 * `inspect` and the CLI's `show` print). Without `epochSeen` the fence is the
 * attempts alone, so a verdict about a receipt that has since expired could
 * settle a later lifetime of the same call that is ambiguous at the same
 * attempt; pass it whenever you have it.
 */
export type Resolution = {
  attemptsSeen: number;
  epochSeen?: string;
  /**
   * Who gives the verdict, recorded in the receipt's history (at most
   * {@link RESOLUTION_BY_MAX} characters); default the store's `owner`.
   */
  by?: string;
  /** Why, recorded in the receipt's history (at most {@link RESOLUTION_NOTE_MAX} characters). */
  note?: string;
} & ({ outcome: 'completed'; result: unknown } | { outcome: 'failed'; error: string });

/** The longest `by` of a {@link Resolution} a resolve accepts, in UTF-16 code units. */
export const RESOLUTION_BY_MAX = 200;

/** The longest `note` of a {@link Resolution} a resolve accepts, in UTF-16 code units. */
export const RESOLUTION_NOTE_MAX = 1000;

/** What {@link ReceiptStore.complete} and {@link ReceiptStore.fail} report once the receipt settled. */
export interface SettleResult {
  /** When it settled, on the server clock. */
  readonly settledMs: number;
  /**
   * Set when the settle came late: a claim had already reported this attempt
   * ambiguous (at `ambiguousMs`). The settle stands, and the receipt records
   * it (`late_settle_ms`, `late_settle_attempt`) next to `ambiguous_ms`.
   */
  readonly late: { readonly attempt: number; readonly ambiguousMs: number } | null;
}

/** What {@link ReceiptStore.heartbeat} reports. */
export interface HeartbeatResult {
  /** End of the extended lease on the server clock. */
  readonly leaseUntilMs: number;
  /**
   * True when a claim has already reported this attempt ambiguous: the lease
   * was extended, but the receipt stays ambiguous (listed, and answered so to
   * claims) until the attempt settles late or an operator resolves it.
   */
  readonly contested: boolean;
}

/** The options of a walk for ambiguous receipts (`ReceiptQueries.listAmbiguous`, `ReceiptQueries.scanAmbiguous`). */
export type AmbiguousWalkOptions = {
  count?: number;
  onCorrupt?: (error: CorruptReceiptError) => void;
  onNewer?: (error: ReceiptVersionError) => void;
};

/** One call's claim, ready to send: its keys and the claim script's arguments (built by `claimRequest`). */
export interface ClaimRequest {
  readonly key: ToolCallReceiptKey;
  /** Receipt, run index, breaker hash, counting set: the KEYS of claim-4.lua. */
  readonly keys: readonly [string, string, string, string];
  /** ARGV of claim-4.lua, with the epoch a receipt this claim creates gets. */
  readonly args: readonly (string | number)[];
  readonly effect: ReceiptEffect;
  readonly leaseMs: number;
  readonly owner: string;
  /** The attempt's job as stored (`''` for none), for a reclaim. */
  readonly job: string;
  /**
   * The epoch minted for this claim: the lifetime's epoch when the claim
   * creates the receipt, and the token a takeover stores, so a claim whose
   * reply is lost can release exactly the attempt it started.
   */
  readonly token: string;
  /** {@link ClaimOptions.needsApproval}: claim-4.lua's ARGV[14], sent by a claim of its own (never carried in another write). */
  readonly needsApproval: boolean;
  /** {@link ClaimOptions.onSent}. */
  readonly onSent: ((epoch: string) => void) | undefined;
}

/** A claim that may have started an attempt: the request sent and the fence that attempt would hold. */
export interface LostClaim {
  readonly request: ClaimRequest;
  readonly fence: AttemptFence;
}
