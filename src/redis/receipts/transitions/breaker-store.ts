/**
 * Per-run circuit breaker for tools: counts failures and consecutive
 * rejections of each tool in a run, and removes the tool for the rest of the
 * run once a limit is reached (or at once, for a destructive failure).
 */
import type { RedisConnection } from '../../connection/connection.js';
import { hmget } from '../../connection/clients/commands.js';
import { wholeNumber, type OptionsSchema } from '../../../core/options.js';
import { commandTimeoutOption, connectionOption, prefixOption, retentionOption } from '../../options.js';
import { assertWellFormedNames } from '../../../core/identity.js';
import { UnexpectedScriptReplyError } from '../../errors.js';
import { breakerField, breakerRedisKey, encodeKeyComponent } from '../../keys.js';
import { ReceiptsChannel } from '../channel.js';

/** How a {@link BreakerStore} talks to Redis. */
export interface BreakerStoreOptions {
  /** An ioredis `Redis` or `Cluster`; the store defines its scripts on it. */
  redis: RedisConnection;
  /** Key prefix, default `trc`; use the receipt store's so a run's keys share a slot. */
  prefix?: string;
  /** TTL of a run's breaker hash, refreshed on every record, in ms. Default 24 h. */
  retentionMs?: number;
  /** The longest each command may go without a reply, in ms; default 5 000 (as `ReceiptStore`'s). */
  commandTimeoutMs?: number;
  /** Failures that remove a tool. Default `MAX_TOOL_FAILURES` (5). */
  maxFailures?: number;
  /** Consecutive rejections that remove a tool. Default `MAX_TOOL_REJECTIONS` (5). */
  maxRejections?: number;
}

/** The rule of each {@link BreakerStoreOptions} option. */
export const BREAKER_STORE_SCHEMA: OptionsSchema<BreakerStoreOptions> = {
  redis: connectionOption,
  prefix: prefixOption,
  retentionMs: retentionOption,
  commandTimeoutMs: commandTimeoutOption,
  maxFailures: wholeNumber(1),
  maxRejections: wholeNumber(1),
};

/** Outcome of recording a failure. */
export interface FailureRecord {
  /** Failures of this tool in this run so far, this one included. */
  readonly failures: number;
  /** Whether the tool is removed for the run (now or earlier). */
  readonly removed: boolean;
  /** True only for the record that removed it. */
  readonly removedNow: boolean;
}

/** Outcome of recording a rejection. */
export interface RejectionRecord {
  /** The current streak of consecutive rejections, this one included. */
  readonly rejections: number;
  readonly removed: boolean;
  readonly removedNow: boolean;
}

/**
 * Circuit-breaker counters in one hash per run,
 * `<prefix>:brk:{<tenant>|<run>}`, in the same Redis Cluster slot as the
 * run's receipts. Fields are `<tool>:failures`, `<tool>:rejections` and
 * `<tool>:removed` (the reason), with the tool name percent-encoded (see
 * `breakerField`). Each
 * record is one atomic script; the hash expires `retentionMs` after the last
 * record.
 */
export class BreakerStore {
  readonly prefix: string;
  /** The keyspace's channel this part talks through (its own, when made from options). */
  readonly channel: ReceiptsChannel;
  private readonly retentionMs: number;
  private readonly maxFailures: number;
  private readonly maxRejections: number;

  /**
   * Made from options (checked here; throws `options.invalid`, or
   * `redis.invalid_connection`, for options it cannot use), or as the
   * breaker side of a `ReceiptsKeyspace`, from its channel.
   */
  constructor(options: BreakerStoreOptions | ReceiptsChannel) {
    this.channel = ReceiptsChannel.of(options, 'BreakerStore', BREAKER_STORE_SCHEMA);
    ({
      prefix: this.prefix,
      retentionMs: this.retentionMs,
      maxFailures: this.maxFailures,
      maxRejections: this.maxRejections,
    } = this.channel.settings);
  }

  /** The key of a run's breaker hash. */
  redisKey(tenantId: string, runId: string): string {
    return breakerRedisKey(this.prefix, tenantId, runId);
  }

  private async record(
    kind: 'failure' | 'rejection' | 'success',
    tenantId: string,
    runId: string,
    toolName: string,
    limit: number,
    removeNow: boolean,
    reason: string,
  ): Promise<{ count: number; removed: boolean; removedNow: boolean }> {
    assertWellFormedNames({ 'tenant id': tenantId, 'run id': runId, 'tool name': toolName });
    const key = this.redisKey(tenantId, runId);
    const reply = await this.channel.call(
      'breaker-record',
      [key],
      [kind, encodeKeyComponent(toolName), limit, removeNow ? '1' : '0', reason, this.retentionMs],
      { step: `breaker ${kind} of ${toolName}` },
    );
    if (!Array.isArray(reply) || reply.length !== 3 || !reply.every((v) => typeof v === 'number')) {
      throw new UnexpectedScriptReplyError('breaker-record', reply);
    }
    const [count, removed, removedNow] = reply as number[];
    return { count: count ?? 0, removed: removed === 1, removedNow: removedNow === 1 };
  }

  /**
   * Counts a failure of `toolName` in the run. The tool is removed when the
   * count reaches the limit, or at once with `removeNow` (the destructive
   * tier). `reason` is kept as the removal reason when this record removes it.
   */
  async recordFailure(
    tenantId: string,
    runId: string,
    toolName: string,
    options: { removeNow?: boolean; reason?: string } = {},
  ): Promise<FailureRecord> {
    const reason =
      options.reason || (options.removeNow ? 'removed after a destructive failure' : `removed after ${this.maxFailures} failures`);
    const r = await this.record('failure', tenantId, runId, toolName, this.maxFailures, options.removeNow ?? false, reason);
    return { failures: r.count, removed: r.removed, removedNow: r.removedNow };
  }

  /** Counts a rejection; the tool is removed when the consecutive streak reaches the limit. */
  async recordRejection(tenantId: string, runId: string, toolName: string, options: { reason?: string } = {}): Promise<RejectionRecord> {
    const reason = options.reason || `removed after ${this.maxRejections} consecutive rejections`;
    const r = await this.record('rejection', tenantId, runId, toolName, this.maxRejections, false, reason);
    return { rejections: r.count, removed: r.removed, removedNow: r.removedNow };
  }

  /** Records a successful call: resets the rejection streak (failures are kept). */
  async recordSuccess(tenantId: string, runId: string, toolName: string): Promise<void> {
    await this.record('success', tenantId, runId, toolName, this.maxRejections, false, '');
  }

  /** The removal reason when the tool is removed for the run, else `null`. */
  async removal(tenantId: string, runId: string, toolName: string): Promise<string | null> {
    return (await this.state(tenantId, runId, toolName)).removal;
  }

  /**
   * The tool's removal reason (`null` when it may run) and its current
   * rejection streak, in one read. A caller that saw a streak of 0 can skip
   * {@link recordSuccess}, which only resets that streak.
   *
   * The wrapper does not call this: `ReceiptStore.claim` reads the same two
   * fields inside its claim script, and `ReceiptStore.complete` resets the
   * streak, so neither costs a command of its own.
   */
  async state(tenantId: string, runId: string, toolName: string): Promise<{ removal: string | null; rejections: number }> {
    const key = this.redisKey(tenantId, runId);
    const [removal, rejections] = await hmget(
      this.channel.redis,
      key,
      breakerField(toolName, 'removed'),
      breakerField(toolName, 'rejections'),
    ).catch((error: unknown) => {
      throw this.channel.typed(error, { redisKey: key, step: `breaker state of ${toolName}` });
    });
    return { removal: removal ?? null, rejections: Number(rejections ?? 0) };
  }
}
