/**
 * Every limit count under a prefix, found through the prefix's index of
 * counts (`./limit-index.ts`) and read on the server clock: what operators list (`tool-receipts
 * limits`, the console's counts page) without the limits' definitions, which
 * live in the workers' code. Each count's state hash keeps the `max`,
 * window length, kind and burst its last reserve or reset was given.
 */
import { receiptsConnection, type RedisConnection } from '../redis/connection/connection.js';
import { defineLimit, type Limit, type LimitKind } from './definitions.js';
import { parseLimitRedisKey, type ParsedLimitKey } from './keys.js';
import { LIMIT_INDEX_READ } from './limit-index.js';
import type { LimitStore } from './limit-store.js';
import type { LimitUsage } from './answers.js';

/** One count an operator sees: whose it is, and its usage in the current window. */
export interface LimitCount extends ParsedLimitKey {
  /** The count's state key, for `redis-cli HGETALL`. */
  readonly redisKey: string;
  readonly usage: LimitUsage;
}

/** Which counts to list: all, or one tenant's (its tenant and run limits). */
export interface LimitCountFilter {
  readonly tenantId?: string;
  /** Only the limit of this name. */
  readonly limit?: string;
}

/** The limit a count's state hash says it was last counted under, or `undefined` for a state that does not read as one. */
async function storedLimit(redis: RedisConnection, redisKey: string, parsed: ParsedLimitKey): Promise<Limit | undefined> {
  const fields = [redisKey, 'window_len', 'max', 'kind', 'burst'];
  const [windowMs, max, kind, burst] = (await receiptsConnection(redis).command('HMGET', fields, redisKey)) as unknown[];
  try {
    // A state of an earlier release names no kind: its window is fixed. defineLimit refuses what does not read.
    return defineLimit({
      name: parsed.name,
      per: parsed.per,
      max: Number(max),
      windowMs: Number(windowMs),
      kind: (kind ?? 'fixed') as LimitKind,
      burst: kind === 'bucket' && burst !== null && burst !== undefined ? Number(burst) : undefined,
    });
  } catch {
    return undefined;
  }
}

/**
 * The counts under `store`'s prefix matching `filter`, sorted by limit, then
 * tenant and run: those its index lists (at most {@link LIMIT_INDEX_READ},
 * every count a reserve touched while its keys are kept), so nothing walks
 * the keyspace. A state hash that is gone, or does not read as a count
 * (hand-edited), is left out.
 */
export async function listLimitCounts(store: LimitStore, redis: RedisConnection, filter: LimitCountFilter = {}): Promise<LimitCount[]> {
  const counts: LimitCount[] = [];
  for (const { parsed, redisKey } of await indexedCounts(store, filter)) {
    const limit = await storedLimit(redis, redisKey, parsed);
    if (limit === undefined) continue;
    counts.push({ ...parsed, redisKey, usage: await store.usage(limit, parsed) });
  }
  return counts;
}

/**
 * The state keys `store`'s index lists that match `filter`, each with its
 * scope, name and subject, sorted by name, then tenant and run: what a
 * listing of counts (windows' here, in-flight caps' in `./cap-counts.ts`) reads.
 */
export async function indexedCounts(store: LimitStore, filter: LimitCountFilter): Promise<{ parsed: ParsedLimitKey; redisKey: string }[]> {
  const found: { parsed: ParsedLimitKey; redisKey: string }[] = [];
  for (const redisKey of await store.index.list()) {
    const parsed = parseLimitRedisKey(store.prefix, redisKey);
    if (parsed === undefined) continue;
    if (filter.tenantId !== undefined && parsed.tenantId !== filter.tenantId) continue;
    if (filter.limit !== undefined && parsed.name !== filter.limit) continue;
    found.push({ parsed, redisKey });
  }
  const order = ({ parsed: c }: { parsed: ParsedLimitKey }) => [c.name, c.tenantId ?? '', c.runId ?? ''].join('\u0000');
  return found.sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
}

/** The limit `count` was last counted under: to reset it, say. */
export function limitOfCount(count: LimitCount): Limit {
  const { kind, max, capacity, windowMs } = count.usage;
  return defineLimit({ name: count.name, per: count.per, max, windowMs, kind, burst: kind === 'bucket' ? capacity : undefined });
}
