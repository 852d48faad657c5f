/**
 * The Redis side of settling an expired opaque attempt without a person:
 * a reconcile lease (so one worker asks the tool while the others wait), the
 * verdict it records, and re-running a provider-keyed call inside its
 * window. Each transition is one Lua script on the receipt, fenced like the
 * receipt store's own.
 */
import type { ToolCallReceiptKey } from '../../../core/identity.js';
import type { RedisConnection } from '../../connection/connection.js';
import { FencedOutError, UnexpectedScriptReplyError, type AttemptFence } from '../../errors.js';
import type { AttemptJob, ReconcileVerdict } from '../reads/record.js';
import { attemptJobText } from './claim.js';
import { durabilityOption, type DurabilityOptions } from '../../durability/durability.js';
import type { OptionsSchema } from '../../../core/options.js';
import { checkedLeaseMs, commandTimeoutOption, connectionOption, prefixOption, retentionOption } from '../../options.js';
import { positiveInt } from '../../settings.js';
import { ReceiptsChannel, toStoredJson } from '../channel.js';

/** What {@link ReconcileStore.begin} found. */
export type ReconcileStart =
  /** This caller holds the reconcile lease; `reconciles` fences its verdict. */
  | { readonly kind: 'begun'; readonly reconciles: number; readonly attemptStartedMs: number; readonly nowMs: number }
  /** Another worker is reconciling; look again after `remainingMs` (from `nowMs`, server clock). */
  | { readonly kind: 'busy'; readonly remainingMs: number; readonly nowMs: number }
  /** A reconcile of this attempt already answered unknown: the call is ambiguous (flagged). */
  | { readonly kind: 'unknown'; readonly ambiguousMs: number }
  /** The receipt moved on (settled, taken over, heartbeated, gone): claim again. */
  | { readonly kind: 'movedOn' };

/** What {@link ReconcileStore.reclaimKeyed} found. */
export type KeyedRerun =
  /** The new attempt's fence (the lifetime's epoch is kept). */
  | { readonly kind: 'reclaimed'; readonly fence: AttemptFence }
  | { readonly kind: 'busy'; readonly remainingMs: number; readonly nowMs: number }
  | { readonly kind: 'windowClosed' }
  | { readonly kind: 'movedOn' };

/** A verdict to record, with what it needs. */
export type VerdictToRecord =
  /** `note`, if any, goes in the history entry (what settled it). */
  | { readonly verdict: 'completed'; readonly result: unknown; readonly note?: string }
  /** With `leaseMs`, attempt n+1 starts now for the caller; without, the receipt is failed (neverStarted) for a later claim to run. */
  | { readonly verdict: 'not_started'; readonly leaseMs?: number; readonly job?: AttemptJob; readonly note?: string }
  | { readonly verdict: 'unknown'; readonly note?: string };

/** The fence of one reconcile: the attempt it judges (number and epoch) and the reconcile that asked. */
export interface ReconcileFence extends AttemptFence {
  readonly reconciles: number;
  /** Worker id recorded as `reconciled_by` (and owner of a not_started re-run). */
  readonly worker: string;
  /**
   * When the reconcile began (`nowMs` of its {@link ReconcileStore.begin}):
   * the verdict is refused when the judged attempt's lease was renewed after
   * that (it was alive after the reconcile began, so what it read may be
   * stale). Not checked when absent.
   */
  readonly begunMs?: number;
}

/** How a {@link ReconcileStore} talks to Redis: the same connection, prefix, retention and durability as the receipt store. */
export interface ReconcileStoreOptions {
  readonly redis: RedisConnection;
  readonly prefix?: string;
  readonly retentionMs?: number;
  /** The longest each command may go without a reply, in ms; default 5 000 (as `ReceiptStore`'s). */
  readonly commandTimeoutMs?: number;
  /**
   * As the receipt store's: a verdict that settles the call or starts an
   * attempt, and a keyed re-run, wait for it, and throw
   * `ReceiptNotDurableError` (nothing to run) when it is not acknowledged.
   */
  readonly durability?: DurabilityOptions;
}

/** The rule of each {@link ReconcileStoreOptions} option. */
export const RECONCILE_STORE_SCHEMA: OptionsSchema<ReconcileStoreOptions> = {
  redis: connectionOption,
  prefix: prefixOption,
  retentionMs: retentionOption,
  commandTimeoutMs: commandTimeoutOption,
  durability: durabilityOption,
};

const ints = (script: string, reply: unknown, count: number): number[] => {
  if (!Array.isArray(reply) || reply.length < count) throw new UnexpectedScriptReplyError(script, reply);
  return reply.slice(0, count).map((v) => {
    const n = Number(v);
    if (!Number.isSafeInteger(n)) throw new UnexpectedScriptReplyError(script, reply);
    return n;
  });
};

/** Reconcile leases, verdicts and keyed re-runs on receipts. */
export class ReconcileStore {
  /** The keyspace's channel this part talks through (its own, when made from options). */
  readonly channel: ReceiptsChannel;
  private readonly retentionMs: number;

  /**
   * Made from options (checked here; throws `options.invalid`, or
   * `redis.invalid_connection`, for options it cannot use), or as the
   * reconcile side of a `ReceiptsKeyspace`, from its channel.
   */
  constructor(options: ReconcileStoreOptions | ReceiptsChannel) {
    this.channel = ReceiptsChannel.of(options, 'ReconcileStore', RECONCILE_STORE_SCHEMA);
    this.retentionMs = this.channel.settings.retentionMs;
  }

  private get durability() {
    return this.channel.durability;
  }

  /** The receipt, its run index and the run's counting set (the channel's, names checked: `MalformedNameError` first). */
  private keys(key: ToolCallReceiptKey): [string, string, string] {
    return this.channel.transitionKeys(key);
  }

  /** Runs a script through the keyspace's channel: the same typed errors as a claim's (corrupt, timeout, lost connection). */
  private call(script: string, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    return this.channel.call(script, keys, args);
  }

  /**
   * Takes the reconcile lease of the expired opaque attempt `lost`,
   * unless another worker holds a live one or a reconcile already answered
   * unknown for it (`again` asks once more all the same).
   */
  async begin(
    key: ToolCallReceiptKey,
    lost: AttemptFence,
    leaseMs: number,
    worker: string,
    options: { again?: boolean } = {},
  ): Promise<ReconcileStart> {
    const args = [
      positiveInt(lost.attempt, 'attempt'),
      checkedLeaseMs(leaseMs),
      worker,
      this.retentionMs,
      options.again ? '1' : '',
      lost.epoch,
    ];
    const reply = await this.call('reconcile-begin', this.keys(key), args);
    const [code, n, startedMs, nowMs] = ints('reconcile-begin', reply, 4) as [number, number, number, number];
    switch (code) {
      case 1:
        return { kind: 'begun', reconciles: n, attemptStartedMs: startedMs, nowMs };
      case 2:
        return { kind: 'busy', remainingMs: n, nowMs };
      case 3:
        return { kind: 'unknown', ambiguousMs: n };
      case 0:
        return { kind: 'movedOn' };
      default:
        throw new UnexpectedScriptReplyError('reconcile-begin', reply);
    }
  }

  /**
   * Records a verdict under the reconcile's fence and acts on it (see
   * `reconcile-settle-3.lua`). Returns the fence of the attempt that now
   * owns the call: the new one for `not_started` with a lease, the judged one
   * otherwise. Throws
   * {@link FencedOutError} when the receipt moved on, another reconcile
   * began since, or the judged attempt's lease was renewed after
   * `fence.begunMs`; then nothing was written.
   */
  async settle(key: ToolCallReceiptKey, fence: ReconcileFence, verdict: VerdictToRecord): Promise<AttemptFence> {
    const payload =
      verdict.verdict === 'completed'
        ? toStoredJson(verdict.result, 'the reconciled result')
        : verdict.verdict === 'unknown'
          ? (verdict.note ?? '')
          : '';
    const leaseMs = verdict.verdict === 'not_started' && verdict.leaseMs !== undefined ? checkedLeaseMs(verdict.leaseMs) : 0;
    const job = verdict.verdict === 'not_started' && verdict.job ? attemptJobText(verdict.job) : '';
    const keys = this.keys(key);
    const mark = this.durability?.mark(keys[0]);
    const reply = await this.call('reconcile-settle', keys, [
      positiveInt(fence.attempt, 'attempt'),
      positiveInt(fence.reconciles, 'reconciles'),
      verdict.verdict,
      fence.worker,
      payload,
      leaseMs,
      this.retentionMs,
      job,
      fence.epoch,
      verdict.verdict === 'unknown' ? '' : (verdict.note ?? ''),
      fence.begunMs ?? '',
    ]);
    const [code, attempts] = ints('reconcile-settle', reply, 2) as [number, number];
    if (code !== 1) {
      const observed = attempts > 0 ? { status: 'running' as const, attempts, epoch: fence.epoch } : null;
      throw new FencedOutError(keys[0], fence, observed, `reconcile (${verdict.verdict})`);
    }
    // An unknown verdict changes nothing a failover could turn into a repeated effect.
    if (verdict.verdict !== 'unknown') await this.durability?.require('reconcile', keys[0], mark);
    return { attempt: attempts, epoch: fence.epoch };
  }

  /**
   * Records that `job` met this call while it was ambiguous, so
   * `retryFailedJobs` retries it too once the call is settled. Writes nothing
   * unless the receipt exists and is running; returns whether it was recorded.
   */
  async noteJob(key: ToolCallReceiptKey, job: AttemptJob): Promise<boolean> {
    const reply = await this.call('note-job', [this.keys(key)[0]], [attemptJobText(job)]);
    return Number(reply) === 1;
  }

  /**
   * Starts the attempt after `lost` of a provider-keyed call whose attempt
   * lost its lease, when the provider's window (from the first attempt's
   * start) is still open at the end of the new lease.
   */
  async reclaimKeyed(
    key: ToolCallReceiptKey,
    options: { lost: AttemptFence; keyWindowMs: number; leaseMs: number; owner: string; job?: AttemptJob },
  ): Promise<KeyedRerun> {
    const keys = this.keys(key);
    const mark = this.durability?.mark(keys[0]);
    const reply = await this.call('reclaim-keyed', keys, [
      positiveInt(options.lost.attempt, 'attempt'),
      positiveInt(options.keyWindowMs, 'keyWindowMs'),
      checkedLeaseMs(options.leaseMs),
      this.retentionMs,
      options.owner,
      options.job ? attemptJobText(options.job) : '',
      options.lost.epoch,
    ]);
    const [code, n, nowMs] = ints('reclaim-keyed', reply, 3) as [number, number, number];
    switch (code) {
      case 1:
        await this.durability?.require('reclaimKeyed', keys[0], mark);
        return { kind: 'reclaimed', fence: { attempt: n, epoch: options.lost.epoch } };
      case 2:
        return { kind: 'busy', remainingMs: n, nowMs };
      case 3:
        return { kind: 'windowClosed' };
      case 0:
        return { kind: 'movedOn' };
      default:
        throw new UnexpectedScriptReplyError('reclaim-keyed', reply);
    }
  }
}

export type { ReconcileVerdict };
