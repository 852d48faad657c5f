/**
 * Read-side of the receipt store: inspecting one receipt, listing a run, and
 * scanning for ambiguous receipts.
 */
import { isCluster, scanKeys, type RedisConnection } from './connection.js';
import { isReceiptRedisKey, receiptScanPattern } from './keys.js';
import { CorruptReceiptError, corruptReceiptErrorOf, ReceiptVersionError } from './errors.js';
import { isAmbiguousRecord, parseInspectReply, type ReceiptRecord } from './receipt-record.js';
import { SCRIPT } from './receipt-scripts.js';
import { queueScript, runScript } from './scripts.js';

/** A receipt read as the error that says why it cannot be read. */
type Unreadable = CorruptReceiptError | ReceiptVersionError;

/** Reads receipts; the scripts must already be defined on the connection. */
export class ReceiptReader {
  constructor(
    private readonly redis: RedisConnection,
    private readonly prefix: string,
  ) {}

  async inspect(redisKey: string): Promise<ReceiptRecord | null> {
    return parseInspectReply(redisKey, await this.script(SCRIPT.inspect, [redisKey]));
  }

  /** Runs a read or index script; a corrupt key becomes a typed error. */
  private async script(name: string, keys: readonly string[]): Promise<unknown> {
    try {
      return await runScript(this.redis, name, keys, []);
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
    if (isCluster(this.redis)) return Promise.all(redisKeys.map((redisKey) => this.inspect(redisKey).catch(corruptAsValue)));
    const pipeline = this.redis.pipeline();
    for (const redisKey of redisKeys) queueScript(pipeline, SCRIPT.inspect, [redisKey], []);
    const replies = (await pipeline.exec()) ?? [];
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
   * fresh read of the receipt.
   */
  async listRun(indexKey: string): Promise<ReceiptRecord[]> {
    let flat: string[];
    try {
      flat = await this.redis.zrange(indexKey, 0, '-1', 'WITHSCORES');
    } catch (error) {
      throw corruptReceiptErrorOf(error, indexKey);
    }
    const members: string[] = [];
    const scores: number[] = [];
    for (let i = 0; i < flat.length; i += 2) {
      members.push(flat[i] as string);
      scores.push(Number(flat[i + 1]));
    }
    const records = await this.inspectMany(members);
    const found: ReceiptRecord[] = [];
    const stale: string[] = [];
    records.forEach((record, i) => {
      if (record) found.push(record);
      if (!record || record.createdMs !== scores[i]) stale.push(members[i] as string);
    });
    for (const member of stale) await this.script(SCRIPT.pruneIndex, [indexKey, member]);
    return found.sort((a, b) => a.createdMs - b.createdMs || (a.redisKey < b.redisKey ? -1 : a.redisKey > b.redisKey ? 1 : 0));
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
    return found;
  }
}
