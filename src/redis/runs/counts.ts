/**
 * Fleet-wide counts of receipts: by status and effect, and the ambiguous
 * ones, under a prefix (or one tenant of it). Exact and cheap: every
 * transition script keeps its run's counting set up to date
 * (`lua/includes/count.lua`), the run registry names every run that has
 * receipts, and one read-only script per run returns its counts, so no
 * receipt is read and the keyspace is never walked.
 */
import type { ReceiptEffect } from '../../core/decision.js';
import { isCluster, receiptsConnection, type RedisConnection } from '../connection/connection.js';
import { corruptReceiptErrorOf, type ReceiptStatus } from '../errors.js';
import { decodeKeyComponent, receiptCountRedisKeyOfTag } from '../keys.js';
import type { RegisteredRun, RunRegistry } from './registry.js';
import { runScript, scriptEntry } from '../scripts/scripts.js';
import { forEachBounded } from '../connection/bounded.js';
import { serverTimeMs as timeOf } from '../connection/clients/commands.js';

/** Receipts of one status and effect. */
export interface ReceiptCount {
  readonly status: ReceiptStatus;
  /**
   * The effect the receipts record. `''` only from a count that read every
   * receipt (`scan`), for one without an effect field; the counting sets
   * keep such a receipt (none this package writes) with the transactional ones.
   */
  readonly effect: ReceiptEffect | '';
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
  /**
   * How the counts were read: from the runs' counting sets, or by reading
   * every receipt (asked for, or because no run in scope is registered, as
   * with receipts an earlier version wrote).
   */
  readonly readBy: 'counting-sets' | 'scan';
  /**
   * With `readBy: 'scan'`, why: it was asked for, or no run in scope is
   * registered (a tenant that never had a receipt, or a mistyped one, lands
   * here too: the walk then finds nothing).
   */
  readonly scanReason?: 'asked' | 'no-registered-runs';
}

/** What one run contributes: its counts, its ambiguous receipts and the server time it was read at. */
export interface RunTally {
  readonly nowMs: number;
  readonly ambiguous: number;
  /** -1 when none of its receipts is ambiguous. */
  readonly oldestAmbiguousSinceMs: number;
  readonly pairs: readonly ReceiptCount[];
}

/** Adds up run tallies into {@link ReceiptStats}. */
export class StatsTotals {
  private readonly counts = new Map<string, ReceiptCount>();
  private runs = 0;
  private ambiguous = 0;
  private oldest: number | null = null;
  /** The latest server time seen, 0 before the first tally. */
  readAtMs = 0;

  add(tally: RunTally): void {
    if (tally.pairs.length > 0) this.runs++;
    this.ambiguous += tally.ambiguous;
    if (tally.oldestAmbiguousSinceMs >= 0 && (this.oldest === null || tally.oldestAmbiguousSinceMs < this.oldest)) {
      this.oldest = tally.oldestAmbiguousSinceMs;
    }
    this.readAtMs = Math.max(this.readAtMs, tally.nowMs);
    for (const pair of tally.pairs) {
      const id = `${pair.status}|${pair.effect}`;
      this.counts.set(id, { ...pair, count: (this.counts.get(id)?.count ?? 0) + pair.count });
    }
  }

  /** The stats, read at `readAtMs` (the server time to report when no run was read). */
  finish(prefix: string, tenantId: string | undefined, readAtMs: number, readBy: ReceiptStats['readBy']): ReceiptStats {
    const byStatusAndEffect = [...this.counts.values()].sort(
      (a, b) => b.count - a.count || a.status.localeCompare(b.status) || a.effect.localeCompare(b.effect),
    );
    const byStatus: Record<ReceiptStatus, number> = { running: 0, completed: 0, failed: 0 };
    for (const c of byStatusAndEffect) byStatus[c.status] = (byStatus[c.status] ?? 0) + c.count;
    return {
      prefix,
      ...(tenantId !== undefined ? { tenantId } : {}),
      runs: this.runs,
      total: byStatusAndEffect.reduce((sum, c) => sum + c.count, 0),
      byStatusAndEffect,
      byStatus,
      ambiguous: this.ambiguous,
      oldestAmbiguousSinceMs: this.oldest,
      readAtMs,
      readBy,
    };
  }
}

/** The server clock in ms. */
export function serverTimeMs(redis: RedisConnection): Promise<number> {
  return timeOf(receiptsConnection(redis));
}

const STATUSES: readonly ReceiptStatus[] = ['running', 'completed', 'failed'];
/**
 * A band's effect (lua/includes/count-score.lua): resumable, opaque, and a
 * third band for every other effect, which only transactional receipts
 * record (a receipt with no effect at all, which nothing writes, lands there too).
 */
const EFFECTS: readonly ReceiptEffect[] = ['resumable', 'opaque', 'transactional'];

/** A count-run reply, or `undefined` when the run's counting set is gone. */
function parseCountReply(reply: unknown): RunTally | undefined {
  const r = (reply as (string | number)[]).map(Number);
  if (r[1] === 0) return undefined;
  const pairs: ReceiptCount[] = [];
  for (let band = 0; band < 9; band++) {
    const count = r[4 + band] ?? 0;
    // band = effect * 3 + status (lua/includes/count-score.lua)
    if (count > 0) pairs.push({ status: STATUSES[band % 3]!, effect: EFFECTS[Math.floor(band / 3)]!, count });
  }
  return { nowMs: r[0]!, ambiguous: r[2]!, oldestAmbiguousSinceMs: r[3]!, pairs };
}

/**
 * Runs `script` once per key list (each one run's keys, so one hash tag) and
 * returns the replies in order: pipelined on one server, one by one on a
 * Cluster, whose pipelines must stay in one slot (the client routes each
 * script to its node). `variadic` for a script taking any number of keys. A
 * key of the wrong type throws `CorruptReceiptError` naming the list's first key.
 */
export async function scriptPerRun(
  redis: RedisConnection,
  script: string,
  keyLists: readonly (readonly string[])[],
  variadic: boolean,
): Promise<unknown[]> {
  const keysOf = (keys: readonly string[]) => (variadic ? [String(keys.length), ...keys] : keys);
  const corrupt = (error: unknown, keys: readonly string[]) => corruptReceiptErrorOf(error, keys[0] ?? '');
  if (isCluster(redis)) {
    return Promise.all(
      keyLists.map((keys) => runScript(redis, script, keysOf(keys), []).catch((e: unknown) => Promise.reject(corrupt(e, keys)))),
    );
  }
  const replies = await receiptsConnection(redis).batch(keyLists.map((keys) => scriptEntry(redis, script, keysOf(keys), [])));
  return replies.map(([error, reply], i) => {
    if (error) throw corrupt(error, keyLists[i]!);
    return reply;
  });
}

/** How many pages of runs {@link countReceipts} keeps in flight. */
const PAGES_IN_FLIGHT = 4;

/**
 * Counts every live receipt under the registry's prefix (or of one tenant)
 * from the runs' counting sets; `undefined` when no run in scope is
 * registered. Registry entries whose counting set is gone are pruned once
 * past their grace (see {@link RunRegistry.prune}).
 */
export async function countReceipts(redis: RedisConnection, registry: RunRegistry, tenantId?: string): Promise<ReceiptStats | undefined> {
  const totals = new StatsTotals();
  const read = await countRegistered(redis, registry, tenantId, (_, tally) => totals.add(tally));
  if (read === undefined) return undefined;
  return totals.finish(registry.prefix, tenantId, totals.readAtMs || read, 'counting-sets');
}

/** What {@link countReceiptsByTenant} returns. */
export interface TenantCounts {
  /** The counts of the whole prefix, as {@link countReceipts} gives them; `undefined` when no run is registered. */
  readonly all: ReceiptStats | undefined;
  /** One entry per tenant with live receipts. */
  readonly byTenant: ReadonlyMap<string, ReceiptStats>;
}

/**
 * The counts of {@link countReceipts} for the whole prefix and for each
 * tenant with live receipts, in one pass over the registry.
 */
export async function countReceiptsByTenant(redis: RedisConnection, registry: RunRegistry): Promise<TenantCounts> {
  const all = new StatsTotals();
  const byTenant = new Map<string, StatsTotals>();
  const read = await countRegistered(redis, registry, undefined, (run, tally) => {
    all.add(tally);
    const tenant = run.tag.slice(0, run.tag.indexOf('|'));
    let totals = byTenant.get(tenant);
    if (totals === undefined) byTenant.set(tenant, (totals = new StatsTotals()));
    totals.add(tally);
  });
  const stats = new Map<string, ReceiptStats>();
  if (read === undefined) return { all: undefined, byTenant: stats };
  for (const [encoded, totals] of byTenant) {
    let tenantId: string;
    try {
      tenantId = decodeKeyComponent(encoded);
    } catch {
      continue; // a hand-written registry member that no store wrote
    }
    const counted = totals.finish(registry.prefix, tenantId, totals.readAtMs || read, 'counting-sets');
    if (counted.total > 0) stats.set(tenantId, counted);
  }
  return { all: all.finish(registry.prefix, undefined, all.readAtMs || read, 'counting-sets'), byTenant: stats };
}

/**
 * Hands every registered run's tally (or `tenantId`'s runs') to `add`,
 * pruning entries whose counting set is gone.
 * Resolves to the server time of the read, or `undefined` when no run was registered.
 */
async function countRegistered(
  redis: RedisConnection,
  registry: RunRegistry,
  tenantId: string | undefined,
  add: (run: RegisteredRun, tally: RunTally) => void,
): Promise<number | undefined> {
  const gone: RegisteredRun[] = [];
  let registered = 0;
  let readAtMs = 0;
  const countPage = async (page: RegisteredRun[]) => {
    registered += page.length;
    const replies = await scriptPerRun(
      redis,
      'count-run',
      page.map((run) => [receiptCountRedisKeyOfTag(registry.prefix, run.tag)]),
      false,
    );
    replies.forEach((reply, i) => {
      const tally = parseCountReply(reply);
      if (tally === undefined) gone.push(page[i]!);
      else {
        add(page[i]!, tally);
        readAtMs = Math.max(readAtMs, tally.nowMs);
      }
    });
  };
  await forEachBounded(registry.runs(tenantId), PAGES_IN_FLIGHT, countPage);
  if (registered === 0) return undefined;
  readAtMs ||= await serverTimeMs(redis);
  if (gone.length > 0) await registry.prune(gone, readAtMs);
  return readAtMs;
}
