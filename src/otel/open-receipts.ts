/**
 * A small index of the receipts this fleet's observed workers left running,
 * so the ambiguous-receipts gauge can count without walking the keyspace.
 *
 * Ambiguity is not written anywhere when it happens: an opaque receipt turns
 * ambiguous by its lease lapsing while nobody runs a script. What can be
 * indexed is every receipt an attempt started (an `execute` decision) and
 * every one a claim found ambiguous; the attempt removes its entry when it
 * settles. So the index holds the calls in flight plus the ambiguous ones
 * (plus the rare entry a crash left between claim and index write, or between
 * settle and removal), and a scrape reads each entry's receipt, counts the
 * ambiguous ones and drops entries whose receipt settled or expired.
 *
 * Layout, per prefix: `<prefix>:open:{open-<n>}`, sorted sets of receipt keys
 * scored by when they were added, `n` in `0..shards-1` chosen by a hash of
 * the receipt key, so a Redis Cluster spreads them over its nodes. Each
 * command touches one key, so none crosses slots. The writes are separate
 * commands from the receipt scripts (their keys carry the run's hash tag,
 * these the shard's), sent without waiting: that is the trade-off against
 * adding keys to every receipt script, which would break the one-hash-tag
 * rule. The gauge is therefore a close operational figure; `tool-receipts
 * stats` is the exact count.
 */
import { receiptsConnection, type ReceiptsConnection, type RedisConnection } from '../redis/connection/connection.js';
import { zaddNx, zrange, zrem } from '../redis/connection/clients/commands.js';
import type { ReceiptStore } from '../redis/receipts/store.js';
import { isAmbiguousRecord } from '../redis/receipts/reads/record.js';

/** Shards per prefix unless told otherwise. */
export const DEFAULT_OPEN_INDEX_SHARDS = 16;

/** FNV-1a over UTF-16 code units: cheap, stable across processes. */
function shardOf(receiptKey: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < receiptKey.length; i++) {
    hash ^= receiptKey.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % shards;
}

/** The index of one prefix's open receipts. */
export class OpenReceiptIndex {
  private readonly redis: ReceiptsConnection;

  constructor(
    redis: RedisConnection,
    private readonly store: ReceiptStore,
    private readonly shards: number = DEFAULT_OPEN_INDEX_SHARDS,
    private readonly onError: (error: unknown) => void = () => {},
  ) {
    this.redis = receiptsConnection(redis);
  }

  get prefix(): string {
    return this.store.prefix;
  }

  /** The sorted set holding `receiptKey`'s entry. */
  shardKey(receiptKey: string): string {
    return this.shardKeyAt(shardOf(receiptKey, this.shards));
  }

  private shardKeyAt(n: number): string {
    return `${this.store.prefix}:open:{open-${n}}`;
  }

  /** Indexes a receipt an attempt started or a claim found ambiguous. Not awaited by callers. */
  add(receiptKey: string): void {
    zaddNx(this.redis, this.shardKey(receiptKey), Date.now(), receiptKey).catch(this.onError);
  }

  /** Drops a receipt this attempt settled. Not awaited by callers. */
  remove(receiptKey: string): void {
    zrem(this.redis, this.shardKey(receiptKey), receiptKey).catch(this.onError);
  }

  /**
   * Counts the indexed receipts that are ambiguous now, and drops the entries
   * whose receipt has settled or expired. Costs one read per shard and one
   * per entry.
   */
  async countAmbiguous(): Promise<number> {
    let ambiguous = 0;
    for (let n = 0; n < this.shards; n++) {
      const shard = this.shardKeyAt(n);
      const members = await zrange(this.redis, shard, 0, -1);
      if (members.length === 0) continue;
      const records = await this.store.inspectRedisKeys(members);
      const closed: string[] = [];
      records.forEach((record, i) => {
        if (record && isAmbiguousRecord(record)) ambiguous++;
        else if (!record || record.status !== 'running') closed.push(members[i] as string);
      });
      if (closed.length > 0) await zrem(this.redis, shard, ...closed);
    }
    return ambiguous;
  }
}
