/**
 * Read-side of the receipt store: inspecting one receipt, listing a run, and
 * scanning for ambiguous receipts.
 */
import { isCluster, scanKeys, type RedisConnection } from './connection.js';
import { isReceiptRedisKey, receiptScanPattern } from './keys.js';
import { isAmbiguousRecord, parseInspectReply, type ReceiptRecord } from './receipt-record.js';
import { SCRIPT } from './receipt-scripts.js';
import { queueScript, runScript } from './scripts.js';

/** Reads receipts; the scripts must already be defined on the connection. */
export class ReceiptReader {
  constructor(
    private readonly redis: RedisConnection,
    private readonly prefix: string,
  ) {}

  async inspect(redisKey: string): Promise<ReceiptRecord | null> {
    return parseInspectReply(redisKey, await runScript(this.redis, SCRIPT.inspect, [redisKey], []));
  }

  /**
   * Reads many receipts, `null` for each that does not exist: in one pipeline,
   * or on a Cluster (where a pipeline must stay in one slot) as concurrent
   * calls the client routes key by key.
   */
  async inspectMany(redisKeys: readonly string[]): Promise<(ReceiptRecord | null)[]> {
    if (redisKeys.length === 0) return [];
    if (isCluster(this.redis)) return Promise.all(redisKeys.map((redisKey) => this.inspect(redisKey)));
    const pipeline = this.redis.pipeline();
    for (const redisKey of redisKeys) queueScript(pipeline, SCRIPT.inspect, [redisKey], []);
    const replies = (await pipeline.exec()) ?? [];
    return redisKeys.map((redisKey, i) => {
      const [err, reply] = replies[i] ?? [new Error('missing pipeline reply'), null];
      if (err) throw err;
      return parseInspectReply(redisKey, reply);
    });
  }

  async listRun(indexKey: string): Promise<ReceiptRecord[]> {
    const members = await this.redis.zrange(indexKey, 0, -1);
    const records = await this.inspectMany(members);
    const found: ReceiptRecord[] = [];
    const gone: string[] = [];
    records.forEach((record, i) => {
      if (record) found.push(record);
      else gone.push(members[i] as string);
    });
    for (const member of gone) {
      await runScript(this.redis, SCRIPT.pruneIndex, [indexKey, member], []);
    }
    return found;
  }

  async listAmbiguous(count: number): Promise<ReceiptRecord[]> {
    const found: ReceiptRecord[] = [];
    const visited = new Set<string>();
    for await (const keys of scanKeys(this.redis, receiptScanPattern(this.prefix), count)) {
      // SCAN may return a key more than once; read each once.
      const ours = keys.filter((k) => !visited.has(k) && isReceiptRedisKey(this.prefix, k));
      for (const k of ours) visited.add(k);
      for (const record of await this.inspectMany(ours)) {
        if (record && isAmbiguousRecord(record)) found.push(record);
      }
    }
    return found;
  }
}
