/**
 * Counts and rebuilds that read every receipt: the slow, independent path
 * beside the counting sets. `scanReceipts` finds the run indexes with SCAN
 * and tallies each run's receipts on the server; it is how receipts written
 * before the counting sets existed are counted, and what the tests hold the
 * fast counts to. `rebuildReceiptCounts` walks the same way and rebuilds each
 * run's counting set and registration.
 */
import { receiptsConnection, scanKeys, type RedisConnection } from '../connection/connection.js';
import { zrange } from '../connection/clients/commands.js';
import type { ReceiptStatus } from '../errors.js';
import { parseRunIndexRedisKey, receiptCountRedisKey, runIndexScanPattern } from '../keys.js';
import { receiptKeyOfRunEntry } from '../key-parts.js';
import { scriptPerRun, serverTimeMs, StatsTotals, type ReceiptCount, type ReceiptStats, type RunTally } from './counts.js';
import type { RunRegistry } from './registry.js';
import { forEachBounded } from '../connection/bounded.js';

/** Options of {@link scanReceipts} and {@link rebuildReceiptCounts}. */
export interface ScanOptions {
  readonly tenantId?: string;
  /** SCAN batch hint and runs read per pipeline. */
  readonly count: number;
}

function parseTally(reply: unknown): RunTally {
  const r = reply as (string | number)[];
  const pairs: ReceiptCount[] = [];
  for (let i = 4; i + 2 < r.length; i += 3) {
    pairs.push({ status: String(r[i]) as ReceiptStatus, effect: String(r[i + 1]) as ReceiptCount['effect'], count: Number(r[i + 2]) });
  }
  return { nowMs: Number(r[0]), ambiguous: Number(r[2]), oldestAmbiguousSinceMs: Number(r[3]), pairs };
}

/** The receipt keys each run index lists, in order, each once (a compact receipt is listed by its member: receiptKeyOfRunEntry). */
async function runMembers(redis: RedisConnection, indexKeys: readonly string[]): Promise<string[][]> {
  const connection = receiptsConnection(redis);
  const entries = connection.isCluster
    ? await Promise.all(indexKeys.map((k) => zrange(connection, k, 0, -1)))
    : (await connection.batch(indexKeys.map((k) => ({ command: 'ZRANGE', args: [k, 0, -1], key: k })))).map(([error, members]) => {
        if (error) throw error;
        return members as string[];
      });
  return entries.map((members, i) => [...new Set(members.map((entry) => receiptKeyOfRunEntry(indexKeys[i] as string, entry)))]);
}

/** How many batches of runs a walk keeps in flight. */
const BATCHES_IN_FLIGHT = 4;

/** Calls `each` with every batch of run index keys under `prefix` (or of one tenant), a few batches at a time. */
async function walkRuns(
  redis: RedisConnection,
  prefix: string,
  options: ScanOptions,
  each: (indexKeys: string[]) => Promise<void>,
): Promise<void> {
  const visited = new Set<string>();
  async function* batches(): AsyncGenerator<string[]> {
    for await (const keys of scanKeys(redis, runIndexScanPattern(prefix, options.tenantId), options.count)) {
      // SCAN may return a key twice, and a longer prefix's keys match the pattern too.
      const ours = keys.filter((k) => !visited.has(k) && parseRunIndexRedisKey(prefix, k) !== undefined);
      for (const k of ours) visited.add(k);
      if (ours.length > 0) yield ours;
    }
  }
  await forEachBounded(batches(), BATCHES_IN_FLIGHT, each);
}

/**
 * Counts every receipt under `prefix` (or of one tenant) by reading it:
 * finds the run indexes with SCAN, then reads each run's receipts with one
 * script that returns only counts, so the receipts never cross the network.
 * Index entries whose receipt expired are not counted. Slow on a large
 * keyspace (it walks all of it); {@link countReceipts} is the everyday path.
 */
export async function scanReceipts(redis: RedisConnection, prefix: string, options: ScanOptions): Promise<ReceiptStats> {
  const totals = new StatsTotals();
  await walkRuns(redis, prefix, options, async (indexKeys) => {
    const members = (await runMembers(redis, indexKeys)).filter((m) => m.length > 0);
    for (const reply of await scriptPerRun(redis, 'tally', members, true)) totals.add(parseTally(reply));
  });
  return totals.finish(prefix, options.tenantId, totals.readAtMs || (await serverTimeMs(redis)), 'scan');
}

/** What a rebuild of the counting sets did (`ReceiptStore.rebuildCounts`, `tool-receipts stats --rebuild`). */
export interface RebuildSummary {
  /** Runs whose counting set was rebuilt and that were registered. */
  readonly runs: number;
  /** Receipts counted. */
  readonly receipts: number;
  /** Keys skipped because they are not well-formed receipts. */
  readonly corrupt: number;
}

/**
 * Rebuilds the counting set of every run under the registry's prefix (or of
 * one tenant) from its receipts, and registers the run: for receipts written
 * before counting sets existed, or after one was lost. Safe beside live
 * workers (each run is recounted by one atomic script), and as slow as
 * {@link scanReceipts}.
 */
export async function rebuildReceiptCounts(redis: RedisConnection, registry: RunRegistry, options: ScanOptions): Promise<RebuildSummary> {
  let runs = 0;
  let receipts = 0;
  let corrupt = 0;
  await walkRuns(redis, registry.prefix, options, async (indexKeys) => {
    const members = await runMembers(redis, indexKeys);
    // walkRuns yields only keys that parse as run indexes of this prefix.
    const runsOf = indexKeys.map((indexKey) => parseRunIndexRedisKey(registry.prefix, indexKey)!);
    const lists: string[][] = [];
    runsOf.forEach((run, i) => {
      if (members[i]!.length > 0) lists.push([receiptCountRedisKey(registry.prefix, run.tenantId, run.runId), ...members[i]!]);
    });
    // Registered first, so a run never has a counting set the registry does not name.
    await Promise.all(runsOf.map((run) => registry.register(run.tenantId, run.runId, true)));
    for (const reply of await scriptPerRun(redis, 'recount-run', lists, true)) {
      const [counted, , skipped] = (reply as number[]).map(Number) as [number, number, number];
      runs++;
      receipts += counted;
      corrupt += skipped;
    }
  });
  return { runs, receipts, corrupt };
}
