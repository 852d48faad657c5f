/**
 * Read-side of the receipt store: inspecting one receipt, listing a run, and
 * scanning for ambiguous receipts.
 */
import { receiptsConnection, scanKeys, type ReceiptsConnection, type RedisConnection } from '../../connection/connection.js';
import { zrangeWithScores } from '../../connection/clients/commands.js';
import { isReceiptRedisKey, receiptScanPattern } from '../../keys.js';
import { receiptKeyOfRunEntry } from '../../key-parts.js';
import { COMPACT_RECEIPT_SCHEMA, CorruptReceiptError, corruptReceiptErrorOf, ReceiptVersionError } from '../../errors.js';
import { isAmbiguousRecord, parseInspectReply, type ReceiptHistoryEntry, type ReceiptRecord } from './record.js';
import { runScript, scriptEntry } from '../../scripts/scripts.js';

/** What a walk for ambiguous receipts found. */
export interface AmbiguousScan {
  /** The ambiguous receipts, in the order met. */
  readonly receipts: ReceiptRecord[];
  /**
   * Receipt keys the walk met under the prefix, ambiguous or not (corrupt
   * ones included); 0 means no receipt at all exists under the prefix.
   */
  readonly receiptsSeen: number;
}

/** A receipt read as the error that says why it cannot be read. */
type Unreadable = CorruptReceiptError | ReceiptVersionError;

/**
 * Reads receipts without writing to them: one receipt with every field, a
 * run's receipts, the ambiguous ones under a prefix, and a receipt's audit
 * trail. A `ReceiptStore` holds one; a console may make its own over the
 * same connection and prefix (it defines the read scripts it needs).
 */
/** A slice of a run index: `limit` entries from `offset` (0-based, in the index's order by `created_ms`). */
export interface RunRange {
  readonly offset: number;
  readonly limit: number;
}

export class ReceiptReader {
  constructor(
    redis: RedisConnection,
    private readonly prefix: string,
  ) {
    this.redis = receiptsConnection(redis);
  }

  private readonly redis: ReceiptsConnection;

  /** The receipt under `redisKey` with every field, or `null` when there is none; throws `CorruptReceiptError` for a key of another type. */
  async inspect(redisKey: string): Promise<ReceiptRecord | null> {
    return parseInspectReply(redisKey, await this.script('inspect', [redisKey]));
  }

  /**
   * The audit trail of the receipt under `redisKey`, oldest first (see
   * {@link ReceiptRecord.history}): every operator verdict, reconcile verdict
   * and late settle of its current lifetime, the last
   * `RECEIPT_HISTORY_CAP` (20). Empty when there is no receipt, or for one
   * written before the history existed.
   */
  async history(redisKey: string): Promise<readonly ReceiptHistoryEntry[]> {
    return (await this.inspect(redisKey))?.history ?? [];
  }

  /** Runs a read or index script; a corrupt key becomes a typed error. */
  private async script(name: string, keys: readonly string[], args: readonly string[] = []): Promise<unknown> {
    try {
      return await runScript(this.redis, name, keys, args);
    } catch (error) {
      throw corruptReceiptErrorOf(error, keys[0] ?? '');
    }
  }

  /**
   * Reads many receipts, `null` for each that does not exist: in one pipeline,
   * or on a Cluster (where a pipeline must stay in one slot) as concurrent
   * calls the client routes key by key.
   */
  async inspectMany(redisKeys: readonly string[]): Promise<(ReceiptRecord | null)[]> {
    return (await this.inspectEach(redisKeys)).map((read) => {
      if (read instanceof CorruptReceiptError || read instanceof ReceiptVersionError) throw read;
      return read;
    });
  }

  /**
   * As {@link inspectMany}, but a corrupt receipt, or one a newer release
   * wrote, is returned as its error instead of failing the whole read.
   */
  private async inspectEach(redisKeys: readonly string[]): Promise<(ReceiptRecord | null | Unreadable)[]> {
    const corruptAsValue = (error: unknown): Unreadable => {
      if (error instanceof CorruptReceiptError || error instanceof ReceiptVersionError) return error;
      throw error;
    };
    if (redisKeys.length === 0) return [];
    if (this.redis.isCluster) return Promise.all(redisKeys.map((redisKey) => this.inspect(redisKey).catch(corruptAsValue)));
    const replies = await this.redis.batch(redisKeys.map((redisKey) => scriptEntry(this.redis, 'inspect', [redisKey], [])));
    return redisKeys.map((redisKey, i) => {
      const [err, reply] = replies[i] ?? [new Error('missing pipeline reply'), null];
      try {
        if (err) throw corruptReceiptErrorOf(err, redisKey);
        return parseInspectReply(redisKey, reply);
      } catch (error) {
        return corruptAsValue(error);
      }
    });
  }

  /**
   * The run's live receipts, ordered by `created_ms` of their current
   * lifetime (then by key). Entries of expired receipts are removed, and an
   * entry whose score is not its receipt's `created_ms` (left by an earlier
   * lifetime, or by an older version) is re-scored, each atomically with a
   * fresh read of the receipt. With `range`, only the index entries from
   * `offset` (0-based, in the index's order) up to `limit` of them are read
   * and checked.
   */
  async listRun(indexKey: string, range?: RunRange): Promise<ReceiptRecord[]> {
    return (await this.readRun(indexKey, range)).receipts;
  }

  /**
   * One page of a run, as {@link listRun} with a range reads it, with the
   * number of entries the index holds (`ZCARD`, less the entries of this
   * page found expired and removed).
   */
  async listRunPage(indexKey: string, range: RunRange): Promise<{ receipts: ReceiptRecord[]; total: number }> {
    return this.readRun(indexKey, range, true);
  }

  private async readRun(
    indexKey: string,
    range: RunRange | undefined,
    count = false,
  ): Promise<{ receipts: ReceiptRecord[]; total: number }> {
    let pairs: [string, number][];
    let entries = 0;
    try {
      const start = range ? range.offset : 0;
      const stop = range ? range.offset + range.limit - 1 : -1;
      pairs = range && range.limit <= 0 ? [] : await zrangeWithScores(this.redis, indexKey, start, stop);
      if (count) entries = Number(await this.redis.command('ZCARD', [indexKey], indexKey));
    } catch (error) {
      throw corruptReceiptErrorOf(error, indexKey);
    }
    const members = pairs.map(([member]) => member);
    const scores = pairs.map(([, score]) => score);
    // A compact receipt is listed by its member, not its key (receiptKeyOfRunEntry).
    const keys = members.map((member) => receiptKeyOfRunEntry(indexKey, member));
    const records = await this.inspectMany(keys);
    const found: ReceiptRecord[] = [];
    const seen = new Set<string>();
    const stale: number[] = [];
    records.forEach((record, i) => {
      // An earlier lifetime of another layout may have left a second entry for the same receipt: listed once.
      if (record && !seen.has(record.redisKey)) found.push(record);
      if (record) seen.add(record.redisKey);
      if (!record || record.createdMs !== scores[i] || !listsItsLayout(record, members[i] as string)) stale.push(i);
    });
    let removed = 0;
    for (const i of stale) {
      if (Number(await this.script('prune-index', [indexKey, keys[i] as string], [members[i] as string])) === 1) removed++;
    }
    found.sort((a, b) => a.createdMs - b.createdMs || (a.redisKey < b.redisKey ? -1 : a.redisKey > b.redisKey ? 1 : 0));
    return { receipts: found, total: count ? Math.max(found.length, entries - removed) : found.length };
  }

  /**
   * Ambiguous receipts found by SCAN. A corrupt receipt goes to `onCorrupt`;
   * one a newer release wrote goes to `onNewer`, or fails the listing when
   * there is none (it may be ambiguous, and this release cannot tell).
   */
  async listAmbiguous(
    count: number,
    onCorrupt: (error: CorruptReceiptError) => void,
    onNewer?: (error: ReceiptVersionError) => void,
  ): Promise<ReceiptRecord[]> {
    return (await this.scanAmbiguous(count, onCorrupt, onNewer)).receipts;
  }

  /** {@link listAmbiguous}, and how many receipt keys the walk met (corrupt and newer ones included). */
  async scanAmbiguous(
    count: number,
    onCorrupt: (error: CorruptReceiptError) => void,
    onNewer?: (error: ReceiptVersionError) => void,
  ): Promise<AmbiguousScan> {
    const found: ReceiptRecord[] = [];
    const visited = new Set<string>();
    for await (const keys of scanKeys(this.redis, receiptScanPattern(this.prefix), count)) {
      // SCAN may return a key more than once; read each once.
      const ours = keys.filter((k) => !visited.has(k) && isReceiptRedisKey(this.prefix, k));
      for (const k of ours) visited.add(k);
      for (const record of await this.inspectEach(ours)) {
        if (record instanceof ReceiptVersionError) {
          if (onNewer === undefined) throw record;
          onNewer(record);
        } else if (record instanceof CorruptReceiptError) onCorrupt(record);
        else if (record && isAmbiguousRecord(record)) found.push(record);
      }
    }
    return { receipts: found, receiptsSeen: visited.size };
  }
}

/** Whether `entry` is the run-index entry `record`'s layout lists it by: its compact member in layout 5, its key before. */
function listsItsLayout(record: ReceiptRecord, entry: string): boolean {
  return (record.schema === COMPACT_RECEIPT_SCHEMA) !== entry.includes('{');
}
