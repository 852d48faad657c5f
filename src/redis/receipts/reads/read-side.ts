/**
 * The read side of a receipt store: the Redis keys of a call and of a run,
 * a receipt with its steps and history, a run's receipts, the ambiguous ones
 * under a prefix, and the counts. `ReceiptStore` holds it beside the
 * transitions (claim, settle, heartbeat, resolve); everything here only reads, apart from
 * pruning run-index entries of expired receipts on the way.
 */
import { assertWellFormedNames, type ToolCallReceiptKey } from '../../../core/identity.js';
import type { ReceiptsConnection } from '../../connection/connection.js';
import type { ReceiptsChannel } from '../channel.js';
import type { CorruptReceiptError, ReceiptVersionError } from '../../errors.js';
import { receiptRedisKey, runIndexRedisKey } from '../../keys.js';
import { receiptsExist } from '../../runs/presence.js';
import { ReceiptReader, type AmbiguousScan, type RunRange } from './inspect.js';
import type { ReceiptHistoryEntry, ReceiptRecord } from './record.js';
import { rebuildReceiptCounts, scanReceipts, type RebuildSummary } from '../../runs/count-scan.js';
import { countReceipts, type ReceiptStats } from '../../runs/counts.js';
import { RunRegistry } from '../../runs/registry.js';
import { positiveInt } from '../../settings.js';

/**
 * Reads the receipts under one prefix: the part of a receipts keyspace that
 * writes no transition. A `ReceiptStore` holds one (`store.reads`) and
 * answers every one of its methods.
 */
export class ReceiptQueries {
  /** The key prefix in use. */
  readonly prefix: string;
  /** The registry of runs with receipts under the prefix (a claim registers its run through it). */
  readonly registry: RunRegistry;
  private readonly redis: ReceiptsConnection;
  private readonly reader: ReceiptReader;

  /** The read part of the keyspace `channel` reaches. */
  constructor(channel: ReceiptsChannel) {
    this.redis = channel.redis;
    this.prefix = channel.settings.prefix;
    this.reader = new ReceiptReader(this.redis, this.prefix);
    this.registry = new RunRegistry(this.redis, this.prefix);
  }

  /**
   * The exact Redis key of a call's receipt, e.g. for `redis-cli HGETALL`.
   * Every method that takes a call goes through it, so a name that is not
   * well-formed Unicode throws `MalformedNameError` before anything is sent.
   */
  redisKey(key: ToolCallReceiptKey): string {
    assertWellFormedNames({ 'tenant id': key.tenantId, 'run id': key.runId, 'tool name': key.toolName, 'args hash': key.argsHash });
    return receiptRedisKey(this.prefix, key);
  }

  /** The key of the sorted set listing a run's receipts by creation time; checks the names as {@link redisKey} does. */
  runIndexKey(tenantId: string, runId: string): string {
    assertWellFormedNames({ 'tenant id': tenantId, 'run id': runId });
    return runIndexRedisKey(this.prefix, tenantId, runId);
  }

  /** The recorded sub-steps of a receipt by name (empty when there is no receipt). */
  async steps(key: ToolCallReceiptKey): Promise<Record<string, unknown>> {
    return (await this.inspect(key))?.steps ?? {};
  }

  /** Reads one receipt with every field, or `null` when there is none. */
  async inspect(key: ToolCallReceiptKey): Promise<ReceiptRecord | null> {
    return this.reader.inspect(this.redisKey(key));
  }

  /**
   * The receipt's audit trail, oldest first: its operator verdicts,
   * reconcile verdicts and late settles (see {@link ReceiptRecord.history}).
   * Empty when there is no receipt.
   */
  async history(key: ToolCallReceiptKey): Promise<readonly ReceiptHistoryEntry[]> {
    return this.reader.history(this.redisKey(key));
  }

  /** Reads receipts by their Redis keys, `null` for each that does not exist. */
  inspectRedisKeys(redisKeys: readonly string[]): Promise<(ReceiptRecord | null)[]> {
    return this.reader.inspectMany(redisKeys);
  }

  /**
   * Every live receipt of a run, oldest first (with `range`, only those of
   * that slice of the run index). Entries whose receipt has expired are
   * pruned from the run index on the way.
   */
  async listRun(tenantId: string, runId: string, range?: RunRange): Promise<ReceiptRecord[]> {
    return this.reader.listRun(this.runIndexKey(tenantId, runId), range);
  }

  /**
   * One page of a run: the live receipts among `range.limit` run-index
   * entries from `range.offset` (oldest first), pruned as {@link listRun}
   * prunes, and `total`, the number of entries the run index holds. Meant
   * for a view that cannot show a long run at once.
   */
  async listRunPage(tenantId: string, runId: string, range: RunRange): Promise<{ receipts: ReceiptRecord[]; total: number }> {
    return this.reader.listRunPage(this.runIndexKey(tenantId, runId), range);
  }

  /**
   * Ambiguous receipts under this prefix, found by SCAN (not KEYS): running,
   * lease expired by the server clock, and flagged by a claim or recorded as
   * opaque. Meant for an operator's tool; it walks the whole keyspace of the
   * connection's server, or of every master of a Cluster. `count` is the SCAN
   * batch hint (default 500). A corrupt receipt met on the way is skipped and
   * handed to `onCorrupt` (default: ignored), so one bad key does not hide
   * the others. A reported attempt stays listed while contested (its lease
   * live again after a late heartbeat). A receipt a newer release wrote
   * (`ReceiptVersionError`) is handed to `onNewer` and skipped; without
   * `onNewer` it fails the listing, since this release cannot tell whether
   * it is ambiguous.
   */
  listAmbiguous(options?: {
    count?: number;
    onCorrupt?: (error: CorruptReceiptError) => void;
    onNewer?: (error: ReceiptVersionError) => void;
  }): Promise<ReceiptRecord[]> {
    return this.reader.listAmbiguous(
      positiveInt(options?.count ?? 500, 'count'),
      options?.onCorrupt ?? (() => undefined),
      options?.onNewer,
    );
  }

  /**
   * {@link listAmbiguous}, also saying how many receipts the walk met under
   * the prefix (`receiptsSeen`: 0 when there is none at all, as under a
   * mistyped prefix), at no extra cost.
   */
  scanAmbiguous(options?: {
    count?: number;
    onCorrupt?: (error: CorruptReceiptError) => void;
    onNewer?: (error: ReceiptVersionError) => void;
  }): Promise<AmbiguousScan> {
    return this.reader.scanAmbiguous(
      positiveInt(options?.count ?? 500, 'count'),
      options?.onCorrupt ?? (() => undefined),
      options?.onNewer,
    );
  }

  /**
   * Whether any receipt exists under this prefix, or of `tenantId`: a run
   * registered there (even if its receipts have expired since), or else a
   * receipt key a SCAN finds (receipts an earlier version wrote). The SCAN
   * stops at the first receipt but walks the whole keyspace when there is
   * none, so ask it about an answer already found empty (`count` is the
   * batch hint, default 500).
   */
  hasReceipts(options?: { tenantId?: string; count?: number }): Promise<boolean> {
    if (options?.tenantId !== undefined) assertWellFormedNames({ 'tenant id': options.tenantId });
    return receiptsExist(this.redis, this.registry, this.scanOptions(options));
  }

  /**
   * Exact counts of the live receipts under this prefix (or of one tenant):
   * by status and effect, and the ambiguous ones with the oldest. Reads each
   * registered run's counting set, never a receipt, so it stays fast on
   * millions of receipts. With `scan: true`, or when no run in scope is
   * registered yet (receipts an earlier version wrote), it instead walks the
   * run indexes with SCAN and reads every receipt (`count` is the SCAN batch
   * hint, default 500): slow on a large keyspace. `readBy` says which; see
   * {@link rebuildCounts}.
   */
  async stats(options?: { tenantId?: string; scan?: boolean; count?: number }): Promise<ReceiptStats> {
    if (options?.tenantId !== undefined) assertWellFormedNames({ 'tenant id': options.tenantId });
    const counted = options?.scan ? undefined : await countReceipts(this.redis, this.registry, options?.tenantId);
    if (counted !== undefined) return counted;
    const scanned = await scanReceipts(this.redis, this.prefix, this.scanOptions(options));
    return { ...scanned, scanReason: options?.scan ? 'asked' : 'no-registered-runs' };
  }

  /**
   * Rebuilds every run's counting set (or one tenant's) from its receipts and
   * registers the run, so {@link stats} counts receipts an older version
   * wrote. Walks the keyspace like `stats({ scan: true })`; safe beside
   * running workers.
   */
  rebuildCounts(options?: { tenantId?: string; count?: number }): Promise<RebuildSummary> {
    if (options?.tenantId !== undefined) assertWellFormedNames({ 'tenant id': options.tenantId });
    return rebuildReceiptCounts(this.redis, this.registry, this.scanOptions(options));
  }

  private scanOptions(options: { tenantId?: string; count?: number } | undefined) {
    return {
      ...(options?.tenantId !== undefined ? { tenantId: options.tenantId } : {}),
      count: positiveInt(options?.count ?? 500, 'count'),
    };
  }
}
