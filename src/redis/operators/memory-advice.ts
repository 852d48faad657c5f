/**
 * The doctor's memory advice: the listpack limits that decide what a receipt
 * costs, whether a compact receipt (layout 5) stays compact under them, and
 * what receipts under a prefix cost now, measured on a sample of them.
 * Advice only, never a safety finding: memory is what a managed Redis bills,
 * not what at-most-once rests on. Reads only.
 * Over 300 lines: the measuring and the sentences that report it are read together.
 */
import { checkOptions, MAX_TIMER_MS, wholeNumber, type OptionsSchema } from '../../core/options.js';
import { checkedConnection, type ReceiptsNode, type RedisConnection } from '../connection/connection.js';
import { configGet, isReplyError } from '../connection/clients/commands.js';
import { DEFAULT_KEY_PREFIX, receiptCountRedisKey, receiptScanPattern, runIndexRedisKey } from '../keys.js';
import { receiptRedisKeyParts } from '../key-parts.js';
import { prefixOption } from '../options.js';

/** The server settings that decide whether a hash or sorted set is kept as one compact listpack. */
export interface ListpackLimits {
  /** `hash-max-listpack-entries` (`hash-max-ziplist-entries` before Redis 7): most fields a listpack hash holds. */
  readonly hashEntries: number;
  /** `hash-max-listpack-value`: longest field or value, in bytes, a listpack hash holds. */
  readonly hashValue: number;
  /** `zset-max-listpack-entries`: most members a listpack sorted set holds. */
  readonly zsetEntries: number;
  /** `zset-max-listpack-value`: longest member, in bytes, a listpack sorted set holds. */
  readonly zsetValue: number;
}

/** What sampled receipts cost, each with its share of its run's index and counting set. */
export interface ReceiptMemorySample {
  /** Receipts measured (at most the `samples` asked for). */
  readonly receipts: number;
  /** Distinct runs they belong to. */
  readonly runs: number;
  /**
   * Mean bytes per receipt (`MEMORY USAGE`): `perReceipt` is its hash plus
   * its shares of its run's index and counting set (each divided by the
   * receipts the index holds); `undefined` when `MEMORY USAGE` was refused.
   */
  readonly bytes?: { readonly perReceipt: number; readonly hash: number; readonly runIndex: number; readonly countingSet: number };
  /** How many sampled receipt hashes had each encoding (`listpack`, `hashtable`). */
  readonly hashEncodings: Readonly<Record<string, number>>;
  /** How many of their runs' indexes had each encoding (`listpack`, `skiplist`). */
  readonly runIndexEncodings: Readonly<Record<string, number>>;
  /** How many of their runs' counting sets had each encoding. */
  readonly countingSetEncodings: Readonly<Record<string, number>>;
  /** How many sampled receipts were in each layout (`receipt.version`: `'2'`, `'4'`, `'5'`…). */
  readonly layouts: Readonly<Record<string, number>>;
}

/** One topic of the advice: `limits`, `compact` (layout 5 at these limits) or `receipts` (the sample). */
export interface MemoryNote {
  readonly topic: 'limits' | 'compact' | 'receipts';
  /** One sentence: what was found and what it means for a receipt's size. */
  readonly message: string;
}

/** The memory advice for one server. */
export interface MemoryAdvice {
  /** `host:port` of the server, when the connection reaches several (a Cluster). */
  readonly node?: string;
  /** The limits read, or `undefined` when `CONFIG GET` was refused (then the advice cannot tell). */
  readonly limits?: ListpackLimits;
  /** Whether a typical compact receipt and its run's sets stay listpacks at `limits`; `undefined` when they are unknown. */
  readonly compactFits?: boolean;
  /** What the receipts under the prefix cost; `undefined` when there are none on this server. */
  readonly sample?: ReceiptMemorySample;
  /** The advice, one note per topic, in the order limits, compact, receipts. */
  readonly notes: readonly MemoryNote[];
}

/** {@link adviseOnMemory}'s answer. */
export interface MemoryReport {
  /** The key prefix whose receipts were sampled. */
  readonly prefix: string;
  /** One advice per server (every master of a Cluster). */
  readonly servers: readonly MemoryAdvice[];
}

/** Options of {@link adviseOnMemory}. */
export interface MemoryAdviceOptions {
  /** The key prefix the workers' stores use. Default `trc`. */
  readonly prefix?: string;
  /** Most receipts measured per server. Default 32. */
  readonly samples?: number;
  /** Longest any one command may take, in ms. Default 5 s. */
  readonly timeoutMs?: number;
}

/** The rule of each {@link MemoryAdviceOptions} option. */
export const MEMORY_ADVICE_SCHEMA: OptionsSchema<MemoryAdviceOptions> = {
  prefix: prefixOption,
  samples: wholeNumber(1, undefined, 1_000),
  timeoutMs: wholeNumber(1, 'ms', MAX_TIMER_MS),
};

/** Default of {@link MemoryAdviceOptions.samples}. */
export const DEFAULT_MEMORY_SAMPLES = 32;

/**
 * What a typical compact receipt (layout 5) needs to stay a listpack: no
 * value over 64 bytes (a longer result is cut into parts of 64), about 20
 * fields (layout 4's 11, a result of about 300 bytes in 5 parts, their
 * count), index and counting-set members of at most 64 bytes.
 */
const COMPACT_NEEDS = { hashValue: 64, hashEntries: 20, zsetValue: 64 } as const;

/** SCAN calls made per server before giving up on finding `samples` receipts (COUNT 1000 each). */
const MAX_SCANS = 100;

const LIMIT_NAMES: Record<keyof ListpackLimits, readonly [string, string]> = {
  hashEntries: ['hash-max-listpack-entries', 'hash-max-ziplist-entries'],
  hashValue: ['hash-max-listpack-value', 'hash-max-ziplist-value'],
  zsetEntries: ['zset-max-listpack-entries', 'zset-max-ziplist-entries'],
  zsetValue: ['zset-max-listpack-value', 'zset-max-ziplist-value'],
};

/** A command the server refused (renamed, denied by an ACL) reads as `undefined`; anything else is thrown. */
async function refusable<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    if (isReplyError(error)) return undefined;
    throw error;
  }
}

async function readLimits(node: ReceiptsNode): Promise<ListpackLimits | undefined> {
  const limits: Partial<Record<keyof ListpackLimits, number>> = {};
  for (const [field, [current, older]] of Object.entries(LIMIT_NAMES) as [keyof ListpackLimits, readonly [string, string]][]) {
    // Redis 7 answers to both names; an older server only to the ziplist one.
    const value = (await refusable(() => configGet(node, current))) ?? (await refusable(() => configGet(node, older)));
    if (value === undefined || !/^[0-9]+$/.test(value)) return undefined;
    limits[field] = Number(value);
  }
  return limits as ListpackLimits;
}

async function sampleReceiptKeys(node: ReceiptsNode, prefix: string, samples: number): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  for (let scans = 0; scans < MAX_SCANS && found.length < samples; scans++) {
    const [next, keys] = (await node.command('SCAN', [cursor, 'MATCH', receiptScanPattern(prefix), 'COUNT', '1000'])) as [string, string[]];
    // A longer prefix (trc:rcpt:x under trc) matches the pattern too: keep only this prefix's receipts.
    for (const key of keys) if (found.length < samples && receiptKeyParts(key)?.prefix === prefix) found.push(key);
    cursor = String(next);
    if (cursor === '0') break;
  }
  return found;
}

/** {@link receiptRedisKeyParts}, a key with a component no store encoded (not a receipt of ours) reading as `undefined`. */
function receiptKeyParts(key: string): ReturnType<typeof receiptRedisKeyParts> {
  try {
    return receiptRedisKeyParts(key);
  } catch {
    return undefined;
  }
}

const tally = (counts: Record<string, number>, name: string) => void (counts[name] = (counts[name] ?? 0) + 1);

async function measureReceipts(node: ReceiptsNode, keys: readonly string[]): Promise<ReceiptMemorySample | undefined> {
  // undefined: MEMORY USAGE refused (an ACL); 0: the key is gone (it expired since SCAN saw it).
  const usage = async (key: string) => {
    const bytes = await refusable(() => node.command('MEMORY', ['USAGE', key, 'SAMPLES', '0']));
    return bytes === undefined ? undefined : typeof bytes === 'number' ? bytes : 0;
  };
  // undefined: the key is gone (it expired since SCAN saw it).
  const encoding = async (key: string) => {
    const name = await node.command('OBJECT', ['ENCODING', key]);
    return name === null || name === undefined ? undefined : String(name);
  };
  const hashEncodings: Record<string, number> = {};
  const runIndexEncodings: Record<string, number> = {};
  const countingSetEncodings: Record<string, number> = {};
  const layouts: Record<string, number> = {};
  const shares = new Map<string, { index?: number; count?: number }>();
  const totals = { hash: 0, index: 0, count: 0 };
  let measured = 0;
  let bytesKnown = true;
  for (const key of keys) {
    const parts = receiptKeyParts(key);
    const hashEncoding = await encoding(key);
    if (parts === undefined || hashEncoding === undefined) continue;
    const { tenantId, runId } = parts.key;
    const indexKey = runIndexRedisKey(parts.prefix, tenantId, runId);
    let share = shares.get(indexKey);
    if (share === undefined) {
      const countKey = receiptCountRedisKey(parts.prefix, tenantId, runId);
      const receiptsInRun = Math.max(1, Number(await node.command('ZCARD', [indexKey])));
      const [index, count] = [await usage(indexKey), await usage(countKey)];
      tally(runIndexEncodings, (await encoding(indexKey)) ?? 'none');
      tally(countingSetEncodings, (await encoding(countKey)) ?? 'none');
      share = {
        ...(index !== undefined && { index: index / receiptsInRun }),
        ...(count !== undefined && { count: count / receiptsInRun }),
      };
      shares.set(indexKey, share);
    }
    const hash = await usage(key);
    bytesKnown &&= hash !== undefined && share.index !== undefined && share.count !== undefined;
    tally(hashEncodings, hashEncoding);
    const layout = await node.command('HGET', [key, 'schema']);
    tally(layouts, layout === null || layout === undefined ? 'unknown' : String(layout));
    measured += 1;
    totals.hash += hash ?? 0;
    totals.index += share.index ?? 0;
    totals.count += share.count ?? 0;
  }
  if (measured === 0) return undefined;
  const mean = (total: number) => Math.round(total / measured);
  const bytes = bytesKnown && {
    bytes: {
      perReceipt: mean(totals.hash + totals.index + totals.count),
      hash: mean(totals.hash),
      runIndex: mean(totals.index),
      countingSet: mean(totals.count),
    },
  };
  return { receipts: measured, runs: shares.size, ...bytes, hashEncodings, runIndexEncodings, countingSetEncodings, layouts };
}

/** `{ hashtable: 3, listpack: 1 }` as `3 hashtable, 1 listpack`; `label` words a name otherwise. */
const counts = (byName: Readonly<Record<string, number>>, label = (name: string) => name) =>
  Object.entries(byName)
    .map(([name, n]) => `${n} ${label(name)}`)
    .join(', ');

/** What to raise so a typical compact receipt stays a listpack at `limits` (`hash-max-listpack-value to 64`…); empty when it does. */
function compactShortfalls(limits: ListpackLimits): string[] {
  return [
    limits.hashValue < COMPACT_NEEDS.hashValue && `hash-max-listpack-value to ${COMPACT_NEEDS.hashValue}`,
    limits.hashEntries < COMPACT_NEEDS.hashEntries && `hash-max-listpack-entries to ${COMPACT_NEEDS.hashEntries}`,
    limits.zsetValue < COMPACT_NEEDS.zsetValue && `zset-max-listpack-value to ${COMPACT_NEEDS.zsetValue}`,
  ].filter((raise): raise is string => raise !== false);
}

/** The notes for one server, from its limits (if readable) and its sample (if any). Pure. */
export function memoryNotes(prefix: string, limits: ListpackLimits | undefined, sample: ReceiptMemorySample | undefined): MemoryNote[] {
  const notes: MemoryNote[] = [];
  if (limits === undefined) {
    notes.push({
      topic: 'limits',
      message:
        'CONFIG GET is refused, so the listpack limits cannot be read: cannot tell whether receipts stay compact; ask your provider for ' +
        'hash-max-listpack-entries, hash-max-listpack-value, zset-max-listpack-entries and zset-max-listpack-value (*-ziplist-* before Redis 7)',
    });
  } else {
    notes.push({
      topic: 'limits',
      message:
        `hash-max-listpack-entries ${limits.hashEntries}, hash-max-listpack-value ${limits.hashValue}, ` +
        `zset-max-listpack-entries ${limits.zsetEntries}, zset-max-listpack-value ${limits.zsetValue}: a hash or sorted set stays ` +
        'one compact listpack only while it holds no more entries and no longer values than these',
    });
    const short = compactShortfalls(limits);
    notes.push({
      topic: 'compact',
      message:
        short.length === 0
          ? `a compact receipt (receiptLayout 5: values of at most 64 bytes, a longer result cut into parts of 64) stays a listpack hash, ` +
            `and its run's index and counting set stay listpacks up to ${limits.zsetEntries} receipts a run; receipts of layouts 2 and 4 ` +
            `stay compact only with results under ${limits.hashValue} bytes and zset-max-listpack-value above their key's length (over 100 bytes)`
          : `a compact receipt (receiptLayout 5) does not stay compact at these limits: raise ${short.join(', ')} (the server's defaults: 64 bytes for both values, 512 hash entries)`,
    });
  }
  if (sample === undefined) {
    notes.push({
      topic: 'receipts',
      message: `no receipts under the prefix ${prefix} on this server: nothing to measure, the limits are the advice`,
    });
    return notes;
  }
  const bytes =
    sample.bytes === undefined
      ? 'MEMORY USAGE is refused, so their bytes cannot be measured'
      : `${sample.bytes.perReceipt} bytes each on average (hash ${sample.bytes.hash}, share of the run index ${sample.bytes.runIndex}, ` +
        `of the counting set ${sample.bytes.countingSet})`;
  notes.push({
    topic: 'receipts',
    message:
      `${sample.receipts} receipt(s) sampled under ${prefix}, in ${sample.runs} run(s): ${bytes}; ` +
      `${counts(sample.layouts, (layout) => `of layout ${layout}`)}; hashes: ${counts(sample.hashEncodings)}; run indexes: ${counts(sample.runIndexEncodings)}; ` +
      `counting sets: ${counts(sample.countingSetEncodings)} (listpack is the compact encoding)`,
  });
  return notes;
}

/**
 * Advises on what receipts cost in Redis memory, on a server (or every
 * master of a Cluster): the listpack limits that decide a receipt's size
 * (`CONFIG GET`; when it is refused, the advice says it cannot tell),
 * whether a typical compact receipt (`receiptLayout: 5`) stays compact at
 * them, and what up to `samples` receipts under `prefix` cost now (`SCAN`,
 * `MEMORY USAGE`, `OBJECT ENCODING`: each receipt with its share of its
 * run's index and counting set). Advice, not a safety finding: it says
 * nothing of whether receipts are kept (see `checkRedisForReceipts`). Reads
 * only. Throws `options.invalid` for options it cannot use.
 */
export async function adviseOnMemory(redis: RedisConnection, options: MemoryAdviceOptions = {}): Promise<MemoryReport> {
  checkOptions('adviseOnMemory', options, MEMORY_ADVICE_SCHEMA);
  const connection = checkedConnection(redis, 'adviseOnMemory', options.timeoutMs ?? 5_000);
  const prefix = options.prefix ?? DEFAULT_KEY_PREFIX;
  const samples = options.samples ?? DEFAULT_MEMORY_SAMPLES;
  const servers: MemoryAdvice[] = [];
  for (const node of await connection.masters()) {
    const limits = await readLimits(node);
    const sample = await measureReceipts(node, await sampleReceiptKeys(node, prefix, samples));
    const compactFits = limits === undefined ? undefined : compactShortfalls(limits).length === 0;
    servers.push({
      ...(connection.isCluster && node.name !== undefined && { node: node.name }),
      ...(limits !== undefined && { limits }),
      ...(compactFits !== undefined && { compactFits }),
      ...(sample !== undefined && { sample }),
      notes: memoryNotes(prefix, limits, sample),
    });
  }
  return { prefix, servers };
}
