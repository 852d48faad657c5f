/**
 * The call side of the receipts keyspace: a call's claim and its settle
 * (complete, fail), each one Lua script with every lease on the Redis
 * server's clock, and the run registered before its first claim. Its other
 * writes (`transitions/attempt-writes.ts`, `transitions/resolve.ts`) and its
 * reads (`reads/read-side.ts`) are parts it answers for.
 * Over 300 lines: it is the public face of every receipt transition and
 * read; its own code is the claim and the settle, and most of its lines are
 * the TSDoc of the methods it answers for.
 */
import type { EffectResumability } from '../../core/decision.js';
import type { ToolCallReceiptKey } from '../../core/identity.js';
import { InvalidReceiptInputError, type AttemptFence } from '../errors.js';
import { breakerField, runRegistrationTag, runRegistryShardKey } from '../keys.js';
import type { DurabilityOptions } from '../durability/durability.js';
import { checkFence, type Observation, ReceiptsChannel, toStoredJson } from './channel.js';
import { claimRequest, REGISTERED, runClaim } from './transitions/claim.js';
import {
  checkPrefetched,
  claimTogether,
  completeAndClaimNext,
  refuseCarriedApproval,
  type PrefetchedClaim,
} from './transitions/claims-ahead.js';
import { flagAmbiguous, heartbeat, markOutcomeUnknown, recordStep } from './transitions/attempt-writes.js';
import { resolveReceipt } from './transitions/resolve.js';
import { ReceiptQueries } from './reads/read-side.js';
import type { ReceiptHistoryEntry, ReceiptRecord } from './reads/record.js';
import type { AmbiguousScan, RunRange } from './reads/inspect.js';
import type { RebuildSummary } from '../runs/count-scan.js';
import type { ReceiptStats } from '../runs/counts.js';
import { RECEIPT_STORE_SCHEMA, type ReceiptStoreOptions } from './store-options.js';
import type {
  AmbiguousWalkOptions,
  ClaimOptions,
  ClaimRequest,
  ClaimResult,
  HeartbeatResult,
  Resolution,
  SettleResult,
} from './store-types.js';

export type { ReceiptRecord } from './reads/record.js';
export type {
  AmbiguousWalkOptions,
  ClaimOptions,
  ClaimResult,
  HeartbeatResult,
  Resolution,
  SettleResult,
  StandingFailure,
} from './store-types.js';
export { RESOLUTION_BY_MAX, RESOLUTION_NOTE_MAX } from './store-types.js';
export type { PrefetchedClaim } from './transitions/claims-ahead.js';
export { DEFAULT_COMMAND_TIMEOUT_MS, DEFAULT_LEASE_MS, DEFAULT_RETENTION_MS } from '../settings.js';
export { RECEIPT_STORE_SCHEMA, type ReceiptStoreOptions };

/** How long a process trusts its own registration of a run before it sends it again (1 min). */
const REREGISTER_AFTER_MS = 60_000;

/** Runs a store remembers registering; past it, the memory starts over (a few more ZADDs, nothing lost). */
const REMEMBERED_RUNS = 10_000;

/**
 * Receipts for tool calls, kept in Redis so a side effect runs at most once.
 *
 * A claim either creates the receipt (the caller executes as attempt 1) or
 * reads the one there and applies `decideToolCallReceipt`: replay a
 * completed result, wait for a live lease, take over an expired resumable
 * attempt or a failed one (a compare-and-set on what was observed, so only one
 * of many racing callers wins), or report an opaque attempt that lost its lease
 * as ambiguous. Every later write (complete, fail, heartbeat, record a step) is
 * fenced on the caller's {@link AttemptFence}: `status = running AND attempts =
 * <its attempt> AND epoch = <its lifetime's epoch>`, so an attempt that was
 * taken over, or that belongs to an earlier lifetime of the same call (the
 * receipt expired and the call was claimed again), can no longer write
 * anything. Once a claim has reported an attempt ambiguous, every claim gets
 * that answer until the receipt is settled.
 *
 * Nothing here reads the local clock: leases start and expire by Redis `TIME`.
 *
 * Retention: a running receipt lives lease + `retentionMs`; a settled one
 * `retentionMs` after it settled; an ambiguous one at least `retentionMs` after
 * the last claim that found it so. Once a receipt has expired, a retry of the
 * same call finds nothing and executes again: size `retentionMs` to outlast the
 * longest a job can still be retried.
 */
export class ReceiptStore {
  /** The default owner written by this store. */
  readonly owner: string;
  /** The key prefix in use. */
  readonly prefix: string;
  /** Whether the store talks to a Redis Cluster (an ioredis `Cluster`). */
  readonly clustered: boolean;
  /** The read side: every method of it is also one of this store's. */
  readonly reads: ReceiptQueries;
  /** The keyspace's one channel: connection, scripts, group commit, durability, error mapping. */
  readonly channel: ReceiptsChannel;
  /** The runs this store registered in the last minute, by registry member, and that write. */
  private readonly registered = new Map<string, { readonly at: number; done: Promise<unknown> }>();
  private readonly beforeClaimOf = (request: ClaimRequest) => this.beforeClaim(request);

  /**
   * Made from options (checked here; throws `options.invalid`, or
   * `redis.invalid_connection`, for options it cannot use), or as the call
   * side of a `ReceiptsKeyspace`, from its channel.
   */
  constructor(options: ReceiptStoreOptions | ReceiptsChannel) {
    const channel = ReceiptsChannel.of(options, 'ReceiptStore', RECEIPT_STORE_SCHEMA);
    this.channel = channel;
    this.reads = new ReceiptQueries(channel);
    this.prefix = channel.settings.prefix;
    this.clustered = channel.clustered;
    this.owner = channel.settings.owner;
  }

  /** Group commit's batches so far (two calls or more each) and the calls they carried; zeros when it is off. */
  get groupCommitted(): { readonly batches: number; readonly calls: number } {
    return this.channel.groupCommitted;
  }

  /** The durability asked of every write, with defaults filled in; undefined when off. */
  get durabilityOptions(): Required<DurabilityOptions> | undefined {
    return this.channel.settings.durability;
  }

  /**
   * Claims a tool call. Creates the receipt when there is none; otherwise
   * decides from what is there, and when the decision is to execute on an
   * existing receipt, takes it over with a compare-and-set (a caller that loses
   * that race decides again from what it then sees, usually `wait`).
   *
   * The effect is decided conservatively (`effectForClaim`): the receipt keeps
   * the effect of its first claim, and a claim treats the call as `opaque`
   * when either the recorded or the requested effect is opaque.
   *
   * When the decision is `ambiguous`, the receipt is flagged (`ambiguous_ms`,
   * set once) and kept at least `retentionMs` longer; it stays `running`, and
   * every later claim answers `ambiguous` whatever it asks for, until an
   * operator {@link resolve}s it or the original attempt settles it late.
   *
   * A receipt whose keys hold the wrong Redis type, or whose hash has no valid
   * `status`, throws `CorruptReceiptError` and nothing is written.
   *
   * A claim (or takeover) that Redis does not answer (the connection's
   * `commandTimeout`, or a lost connection) throws `RedisTimeoutError` or
   * `RedisConnectionLostError`, but only after releasing what it may have
   * started: once Redis answers again (bounded tries, see
   * `LOST_CLAIM_RELEASE_BUDGET_MS`), the attempt this very claim started,
   * if it landed, is settled as failed `neverStarted` (`release-lost-claim-3.lua`),
   * so the call is never left running to become ambiguous. The error's
   * `releases` says what became of it. A claim the client never sent (it
   * refused it, or held it back and dropped it: `sent: false`) started
   * nothing and throws at once, releasing nothing.
   *
   * The same script reads the tool's circuit-breaker state in the run (the
   * `<prefix>:brk:{<tenant>|<run>}` hash a `BreakerStore` with this prefix
   * keeps). When the tool is removed and the decision is `execute`, nothing is
   * created or taken over: see {@link ClaimResult.toolRemoval}. A claim with
   * `needsApproval` that finds no receipt creates nothing either: see
   * {@link ClaimResult.approvalNeeded}.
   *
   * `ahead` is the claim {@link completeAndClaim} already made for this very
   * call (same key, effect, lease and owner, and not `needsApproval`, else `InvalidReceiptInputError`):
   * the claim then decides from that answer, exactly as from its own claim
   * script, and sends only what the decision still needs (a takeover, or
   * flagging an ambiguous attempt). Use each prefetched claim once.
   */
  async claim(key: ToolCallReceiptKey, options: ClaimOptions, ahead?: PrefetchedClaim): Promise<ClaimResult> {
    const request = this.claimRequestOf(key, options);
    if (ahead !== undefined) {
      // Claimed by the write that carried it, which registered the run and waited for durability.
      checkPrefetched(request, ahead);
      return runClaim(this.channel, request, options.settlesExpired === true, REGISTERED, ahead.observation);
    }
    const before = this.beforeClaim(request);
    const { registered } = before instanceof Promise ? await before : before;
    return runClaim(this.channel, request, options.settlesExpired === true, registered);
  }

  /**
   * Settles the receipt as completed with `result` (stored as JSON; `undefined`
   * is kept as "no value"), and in the same script resets the tool's rejection
   * streak in the run's breaker hash when it is above 0 (a missing hash is not
   * created; a removed tool stays removed). Throws {@link FencedOutError} when
   * `fence` no longer owns the receipt (then nothing is written), and
   * `ReceiptValueNotSerializableError` (before writing) when the result has no
   * faithful JSON form. When a claim had already reported the attempt
   * ambiguous, the settle still stands (the attempt knows its outcome) and is
   * recorded as late: see {@link SettleResult.late}.
   */
  async complete(key: ToolCallReceiptKey, fence: AttemptFence, result: unknown): Promise<SettleResult> {
    const text = toStoredJson(result, 'the result');
    const args = [text, this.channel.settings.retentionMs, breakerField(key.toolName, 'rejections')];
    return settled(await this.channel.fenced('complete', 'complete', this.channel.callKeys(key), fence, args), fence);
  }

  /**
   * {@link complete}, and in the same script, once the receipt is settled,
   * the claim of `next`: the following call of the same run (so the same hash
   * tag), claimed exactly as {@link claim}'s script would, after the complete
   * (so it sees the reset rejection streak). One round trip instead of two.
   *
   * Returns the settle and, unless nothing was claimed, the claim's answer to
   * hand to `claim(next.key, next.options, ahead)`. Nothing is claimed when
   * the next call's receipt is corrupt (its own claim then throws why).
   * Throws as {@link complete} does; a fenced-out complete claims nothing.
   * With durability, one acknowledgement covers both writes; when it falls
   * short, an attempt the claim started is settled as failed `neverStarted`
   * (its effect never starts) before `ReceiptNotDurableError` is thrown. A
   * reply Redis does not give releases the next call's claim as {@link claim}
   * does (the complete itself is then unknown: the next delivery replays it
   * if it landed).
   */
  async completeAndClaim(
    key: ToolCallReceiptKey,
    fence: AttemptFence,
    result: unknown,
    next: { readonly key: ToolCallReceiptKey; readonly options: ClaimOptions },
  ): Promise<{ settled: SettleResult; ahead: PrefetchedClaim | null }> {
    checkFence(fence);
    const text = toStoredJson(result, 'the result');
    const keys = this.channel.callKeys(key);
    const request = this.claimRequestOf(next.key, next.options);
    refuseCarriedApproval(request);
    if (request.keys[1] !== keys[1]) {
      throw new InvalidReceiptInputError(`completeAndClaim: the next call must belong to the same run as ${keys[0]}`);
    }
    const args = [fence.attempt, text, this.channel.settings.retentionMs, breakerField(key.toolName, 'rejections'), fence.epoch];
    const { seen, ahead } = await completeAndClaimNext(this.channel, this.beforeClaimOf, { keys, args, fence }, request);
    return { settled: settled(seen, fence), ahead };
  }

  /**
   * Claims calls of one run that run side by side, all in one script, each
   * exactly as {@link claim}'s script would claim it on its own (in the order
   * given). Returns, per call, the answer to hand to `claim(key, options,
   * ahead)` for that call, or `null` when its receipt is corrupt (its own
   * claim then throws why). With durability, one acknowledgement covers
   * every claim; when it falls short, every attempt started is settled as
   * failed `neverStarted` and `ReceiptNotDurableError` is thrown. A reply
   * Redis does not give releases every claim of the group as {@link claim} does.
   */
  async claimGroup(
    calls: readonly { readonly key: ToolCallReceiptKey; readonly options: ClaimOptions }[],
  ): Promise<(PrefetchedClaim | null)[]> {
    const requests = calls.map((c) => this.claimRequestOf(c.key, c.options));
    requests.forEach(refuseCarriedApproval);
    if (requests.some((r) => r.keys[1] !== requests[0]?.keys[1])) {
      throw new InvalidReceiptInputError('claimGroup: every call must belong to the same run');
    }
    return claimTogether(this.channel, this.beforeClaimOf, requests);
  }

  /**
   * Settles the receipt as failed; the next claim of the call executes again
   * as the next attempt. Throws {@link FencedOutError}. Late settles are
   * recorded as for {@link complete}.
   */
  async fail(key: ToolCallReceiptKey, fence: AttemptFence, failure: { error: string; tier?: string }): Promise<SettleResult> {
    const args = [failure.error, failure.tier ?? '', this.channel.settings.retentionMs];
    return settled(await this.channel.fenced('fail', 'fail', this.channel.transitionKeys(key), fence, args), fence);
  }

  private claimRequestOf(key: ToolCallReceiptKey, options: ClaimOptions): ClaimRequest {
    return claimRequest(key, this.channel.callKeys(key), options, this.channel.settings);
  }

  /** Durability checked and the run registered: what comes before any claim that may create a receipt. */
  private beforeClaim(
    request: ClaimRequest,
  ): { readonly registered: Promise<unknown> } | Promise<{ readonly registered: Promise<unknown> }> {
    // Registered before a claim can create the run's first receipt, so stats finds the run. On one connection
    // the registration goes out ahead of the claim and is awaited with it; a Cluster may route them to different nodes.
    // On one node without durability (most claims) there is nothing to wait for first: the answer is not a promise.
    if (this.channel.durability === undefined && !this.clustered) return { registered: this.registerRun(request.key) };
    return this.beforeClaimAwaited(request);
  }

  private async beforeClaimAwaited(request: ClaimRequest): Promise<{ readonly registered: Promise<unknown> }> {
    await this.channel.durability?.ready(request.keys[0]);
    const registered = this.registerRun(request.key);
    if (this.clustered) await registered;
    return { registered };
  }

  /**
   * Registers the run in the run registry (`runs/registry.ts`), or resolves
   * at once when this store did in the last minute; concurrent claims of
   * one run share one write, and a failed write is forgotten, so the next
   * claim of the run tries again. A claim does it before it may create the
   * run's first receipt, and so does the approval gate, which may create it.
   */
  registerRun(key: ToolCallReceiptKey): Promise<unknown> {
    const tag = runRegistrationTag(key.tenantId, key.runId);
    const now = Date.now();
    const known = this.registered.get(tag);
    if (known !== undefined && now - known.at < REREGISTER_AFTER_MS) return known.done;
    if (this.registered.size >= REMEMBERED_RUNS) this.registered.clear();
    const done = this.channel.call('register-run', [runRegistryShardKey(this.prefix, key.tenantId)], [tag]);
    const entry = { at: now, done };
    this.registered.set(tag, entry);
    // Once it landed, the claims of the run are not chained to it (see REGISTERED).
    done.then(
      () => void (entry.done = REGISTERED),
      () => this.registered.get(tag) === entry && this.registered.delete(tag),
    );
    return done;
  }

  // The attempt's other writes and the operator's resolve (transitions/attempt-writes.ts, transitions/resolve.ts).

  /**
   * Records that the expired attempt `fence` is ambiguous (as a claim does,
   * `ambiguous_ms` set once) and keeps the receipt at least `retentionMs`.
   * For callers that claimed with `settlesExpired` and could not settle it.
   * Returns when it was first found ambiguous, or `null` when the receipt
   * moved on (then nothing was written).
   */
  flagAmbiguous(key: ToolCallReceiptKey, fence: AttemptFence, effect: EffectResumability): Promise<number | null> {
    return flagAmbiguous(this.channel, key, fence, effect);
  }

  /**
   * Records that the fenced attempt cannot tell whether its effect landed:
   * the receipt stays running with its lease expired now (server clock) and
   * the error kept, exactly as if the worker had crashed, and an opaque
   * receipt is flagged ambiguous at once. The next claim decides as after a
   * crash: an opaque call is ambiguous, a resumable one is taken over. Throws
   * {@link FencedOutError} when `fence` no longer owns the receipt.
   */
  markOutcomeUnknown(key: ToolCallReceiptKey, fence: AttemptFence, error: string): Promise<{ ambiguousMs: number | null }> {
    return markOutcomeUnknown(this.channel, key, fence, error);
  }

  /**
   * Extends the lease of the fenced attempt to `leaseMs` from now on the
   * server clock (default: the store's lease). Throws {@link FencedOutError}.
   * When a claim has already reported the attempt ambiguous, the lease is
   * extended but the verdict stands (`contested`): the receipt stays listed
   * as ambiguous until the attempt settles late or an operator resolves it.
   */
  heartbeat(key: ToolCallReceiptKey, fence: AttemptFence, leaseMs?: number): Promise<HeartbeatResult> {
    return heartbeat(this.channel, key, fence, leaseMs);
  }

  /**
   * Records that the sub-step `name` of a resumable effect finished with
   * `value` (stored as JSON), so an attempt that takes over can skip it.
   * Throws {@link FencedOutError}, or `ReceiptValueNotSerializableError` before
   * writing.
   */
  recordStep(key: ToolCallReceiptKey, fence: AttemptFence, name: string, value: unknown): Promise<void> {
    return recordStep(this.channel, key, fence, name, value);
  }

  /**
   * An operator settles an ambiguous receipt: `completed` with the result the
   * effect is known to have produced, or `failed` so the call may run again.
   * Fenced on the attempts the operator saw and, when given, the epoch
   * (`epochSeen`). Throws {@link FencedOutError} when the receipt changed (or
   * is gone), {@link NotAmbiguousError} when it is not ambiguous, and
   * {@link ContestedReceiptError} when it is contested (reported ambiguous,
   * but its attempt heartbeated since, so it is alive and may still settle
   * late: wait for that or for its lease to lapse).
   *
   * A resolve that settles appends `resolve.completed` or `resolve.failed` to
   * the receipt's history (see {@link ReceiptRecord.history}) with
   * `resolution.by` (default this store's `owner`), the attempt and
   * `resolution.note`, in the same script; later attempts keep it. A `by` or
   * `note` that is blank, too long or not well-formed text throws
   * `InvalidReceiptInputError` before anything is sent.
   */
  resolve(key: ToolCallReceiptKey, resolution: Resolution): Promise<void> {
    return resolveReceipt(this.channel, key, resolution);
  }

  // The reads (reads/read-side.ts).

  /** {@link ReceiptQueries.redisKey}. */
  redisKey(key: ToolCallReceiptKey): string {
    return this.reads.redisKey(key);
  }

  /** {@link ReceiptQueries.runIndexKey}. */
  runIndexKey(tenantId: string, runId: string): string {
    return this.reads.runIndexKey(tenantId, runId);
  }

  /** {@link ReceiptQueries.steps}. */
  steps(key: ToolCallReceiptKey): Promise<Record<string, unknown>> {
    return this.reads.steps(key);
  }

  /** {@link ReceiptQueries.inspect}. */
  inspect(key: ToolCallReceiptKey): Promise<ReceiptRecord | null> {
    return this.reads.inspect(key);
  }

  /** {@link ReceiptQueries.history}. */
  history(key: ToolCallReceiptKey): Promise<readonly ReceiptHistoryEntry[]> {
    return this.reads.history(key);
  }

  /** {@link ReceiptQueries.inspectRedisKeys}. */
  inspectRedisKeys(redisKeys: readonly string[]): Promise<(ReceiptRecord | null)[]> {
    return this.reads.inspectRedisKeys(redisKeys);
  }

  /** {@link ReceiptQueries.listRun}. */
  listRun(tenantId: string, runId: string, range?: RunRange): Promise<ReceiptRecord[]> {
    return this.reads.listRun(tenantId, runId, range);
  }

  /** {@link ReceiptQueries.listRunPage}. */
  listRunPage(tenantId: string, runId: string, range: RunRange): Promise<{ receipts: ReceiptRecord[]; total: number }> {
    return this.reads.listRunPage(tenantId, runId, range);
  }

  /** {@link ReceiptQueries.listAmbiguous}. */
  listAmbiguous(options?: AmbiguousWalkOptions): Promise<ReceiptRecord[]> {
    return this.reads.listAmbiguous(options);
  }

  /** {@link ReceiptQueries.scanAmbiguous}. */
  scanAmbiguous(options?: AmbiguousWalkOptions): Promise<AmbiguousScan> {
    return this.reads.scanAmbiguous(options);
  }

  /** {@link ReceiptQueries.hasReceipts}. */
  hasReceipts(options?: { tenantId?: string; count?: number }): Promise<boolean> {
    return this.reads.hasReceipts(options);
  }

  /** {@link ReceiptQueries.stats}. */
  stats(options?: { tenantId?: string; scan?: boolean; count?: number }): Promise<ReceiptStats> {
    return this.reads.stats(options);
  }

  /** {@link ReceiptQueries.rebuildCounts}. */
  rebuildCounts(options?: { tenantId?: string; count?: number }): Promise<RebuildSummary> {
    return this.reads.rebuildCounts(options);
  }
}

/** A settle's report: when, and whether a claim had reported the attempt ambiguous first (code 2). */
function settled(seen: Observation, fence: AttemptFence): SettleResult {
  if (seen.code !== 2) return { settledMs: seen.nowMs, late: null };
  return { settledMs: seen.nowMs, late: { attempt: fence.attempt, ambiguousMs: seen.ambiguousMs ?? seen.nowMs } };
}
