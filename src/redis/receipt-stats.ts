/**
 * Fleet-wide counts of receipts: by status and effect, and the ambiguous
 * ones, under a prefix (or one tenant of it). Exact: every receipt is read,
 * on the server, by a script per run that returns only counts.
 */
import type { EffectResumability } from '../core/decision.js';
import { isCluster, scanKeys, type RedisConnection } from './connection.js';
import type { ReceiptStatus } from './errors.js';
import { parseRunIndexRedisKey, runIndexScanPattern } from './keys.js';
import { SCRIPT } from './receipt-scripts.js';
import { queueScript, runVariadicScript } from './scripts.js';

/** Receipts of one status and effect. */
export interface ReceiptCount {
  readonly status: ReceiptStatus;
  readonly effect: EffectResumability;
  readonly count: number;
}

/** Counts of receipts, as {@link ReceiptStore.stats} returns them. */
export interface ReceiptStats {
  readonly prefix: string;
  /** The tenant counted, when the count was limited to one. */
  readonly tenantId?: string;
  /** Runs with at least one live receipt. */
  readonly runs: number;
  readonly total: number;
  /** One entry per status and effect present, largest first. */
  readonly byStatusAndEffect: readonly ReceiptCount[];
  readonly byStatus: Readonly<Record<ReceiptStatus, number>>;
  /** Running and reported ambiguous by a claim, or opaque with its lease expired: what `tool-receipts ambiguous` lists. */
  readonly ambiguous: number;
  /** Server time the oldest ambiguous receipt became ambiguous; `null` when none is. */
  readonly oldestAmbiguousSinceMs: number | null;
  /** Server time of the reads (the latest of them), in ms. */
  readonly readAtMs: number;
}

/** Options of {@link tallyReceipts}. */
export interface TallyOptions {
  readonly tenantId?: string;
  /** SCAN batch hint and runs read per pipeline. */
  readonly count: number;
}

interface RunTally {
  readonly nowMs: number;
  readonly ambiguous: number;
  readonly oldestAmbiguousSinceMs: number;
  readonly pairs: readonly ReceiptCount[];
}

function parseTally(reply: unknown): RunTally {
  const r = reply as (string | number)[];
  const pairs: ReceiptCount[] = [];
  for (let i = 4; i + 2 < r.length; i += 3) {
    pairs.push({ status: String(r[i]) as ReceiptStatus, effect: String(r[i + 1]) as EffectResumability, count: Number(r[i + 2]) });
  }
  return { nowMs: Number(r[0]), ambiguous: Number(r[2]), oldestAmbiguousSinceMs: Number(r[3]), pairs };
}

/** How many batches of runs {@link tallyReceipts} keeps in flight. */
const BATCHES_IN_FLIGHT = 4;

/** The tallies of `indexKeys`' runs: their members, then one script per run. */
async function tallyRuns(redis: RedisConnection, indexKeys: readonly string[]): Promise<RunTally[]> {
  if (isCluster(redis)) {
    // A Cluster pipeline must stay in one slot; the client routes each run's commands to its node.
    return Promise.all(
      indexKeys.map(async (indexKey) => {
        const members = await redis.zrange(indexKey, 0, '-1');
        return parseTally(members.length === 0 ? [0, 0, 0, -1] : await runVariadicScript(redis, SCRIPT.tally, members, []));
      }),
    );
  }
  const reads = redis.pipeline();
  for (const indexKey of indexKeys) reads.zrange(indexKey, 0, '-1');
  const memberLists = ((await reads.exec()) ?? []).map(([error, members]) => {
    if (error) throw error;
    return members as string[];
  });
  const tallies = redis.pipeline();
  const nonEmpty = memberLists.filter((members) => members.length > 0);
  for (const members of nonEmpty) queueScript(tallies, SCRIPT.tally, [String(members.length), ...members], []);
  return ((await tallies.exec()) ?? []).map(([error, reply]) => {
    if (error) throw error;
    return parseTally(reply);
  });
}

/**
 * Counts every receipt under `prefix` (or of one tenant): finds the run
 * indexes with SCAN, then reads each run's receipts with one script that
 * returns only counts, so the receipts never cross the network. Index
 * entries whose receipt expired are not counted.
 */
export async function tallyReceipts(redis: RedisConnection, prefix: string, options: TallyOptions): Promise<ReceiptStats> {
  const counts = new Map<string, ReceiptCount>();
  const visited = new Set<string>();
  let runs = 0;
  let ambiguous = 0;
  let oldest: number | null = null;
  let readAtMs = 0;
  const add = (tallies: RunTally[]) => {
    for (const tally of tallies) {
      if (tally.pairs.length > 0) runs++;
      ambiguous += tally.ambiguous;
      if (tally.oldestAmbiguousSinceMs >= 0 && (oldest === null || tally.oldestAmbiguousSinceMs < oldest)) {
        oldest = tally.oldestAmbiguousSinceMs;
      }
      readAtMs = Math.max(readAtMs, tally.nowMs);
      for (const pair of tally.pairs) {
        const id = `${pair.status}|${pair.effect}`;
        counts.set(id, { ...pair, count: (counts.get(id)?.count ?? 0) + pair.count });
      }
    }
  };
  // A few batches in flight, so this process reads one batch's replies while the server tallies the next.
  // A batch never rejects: its error is kept, and the first one is thrown once seen.
  const inFlight = new Set<Promise<void>>();
  let failure: { error: unknown } | undefined;
  for await (const keys of scanKeys(redis, runIndexScanPattern(prefix, options.tenantId), options.count)) {
    // SCAN may return a key twice, and a longer prefix's keys match the pattern too.
    const ours = keys.filter((k) => !visited.has(k) && parseRunIndexRedisKey(prefix, k) !== undefined);
    for (const k of ours) visited.add(k);
    if (ours.length === 0) continue;
    const batch: Promise<void> = tallyRuns(redis, ours)
      .then(add, (error: unknown) => void (failure ??= { error }))
      .finally(() => inFlight.delete(batch));
    inFlight.add(batch);
    if (inFlight.size >= BATCHES_IN_FLIGHT) await Promise.race(inFlight);
    if (failure) throw failure.error;
  }
  await Promise.all(inFlight);
  if (failure) throw failure.error;
  const byStatusAndEffect = [...counts.values()].sort(
    (a, b) => b.count - a.count || a.status.localeCompare(b.status) || a.effect.localeCompare(b.effect),
  );
  const byStatus: Record<ReceiptStatus, number> = { running: 0, completed: 0, failed: 0 };
  for (const c of byStatusAndEffect) byStatus[c.status] = (byStatus[c.status] ?? 0) + c.count;
  if (readAtMs === 0) readAtMs = await serverTimeMs(redis);
  return {
    prefix,
    ...(options.tenantId !== undefined ? { tenantId: options.tenantId } : {}),
    runs,
    total: byStatusAndEffect.reduce((sum, c) => sum + c.count, 0),
    byStatusAndEffect,
    byStatus,
    ambiguous,
    oldestAmbiguousSinceMs: oldest,
    readAtMs,
  };
}

async function serverTimeMs(redis: RedisConnection): Promise<number> {
  const [seconds, micros] = (await redis.time()) as [number | string, number | string];
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}
