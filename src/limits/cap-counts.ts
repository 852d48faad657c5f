/**
 * Every in-flight cap under a prefix, found through the prefix's index of
 * counts (`./limit-index.ts`, which lists a cap's state key beside the
 * windows') and read on the server clock: the slots held of k and the calls
 * waiting, as operators list them (`tool-receipts limits`, the console's
 * counts page) without the caps' definitions.
 */
import { receiptsConnection, type RedisConnection } from '../redis/connection/connection.js';
import type { CapUsage } from './cap-store.js';
import type { ParsedLimitKey } from './keys.js';
import { indexedCounts, type LimitCountFilter } from './limit-counts.js';
import type { LimitStore } from './limit-store.js';

/** One in-flight cap an operator sees: whose it is, and its slots now. */
export interface CapCount extends ParsedLimitKey {
  /** The cap's state key, for `redis-cli HGETALL`. */
  readonly redisKey: string;
  readonly cap: CapUsage;
}

/**
 * The caps under `store`'s prefix matching `filter`, sorted by name, then
 * tenant and run: those its index lists whose state says `kind` `cap`.
 */
export async function listCapCounts(store: LimitStore, redis: RedisConnection, filter: LimitCountFilter = {}): Promise<CapCount[]> {
  const caps: CapCount[] = [];
  for (const { parsed, redisKey } of await indexedCounts(store, filter)) {
    const kind = await receiptsConnection(redis).command('HGET', [redisKey, 'kind'], redisKey);
    if (kind === 'cap') caps.push({ ...parsed, redisKey, cap: await store.caps.usage(parsed, parsed) });
  }
  return caps;
}
