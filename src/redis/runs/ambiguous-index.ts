/**
 * The receipts that need a person, found from the indexes instead of the
 * keyspace: the run registry names every run with receipts, and each run's
 * counting set keeps a `?`-entry per receipt that is (or will be, once its
 * lease lapses) ambiguous, scored by the time it is ambiguous from. One
 * read-only script per registered run returns the run's live ambiguous
 * entries, so no receipt is read and no SCAN runs: the cost grows with the
 * number of registered runs (like `stats`), not with the size of the keyspace.
 */
import { decodeKeyComponent, encodeKeyComponent, receiptCountRedisKeyOfTag } from '../keys.js';
import { callPartOfMember } from '../key-parts.js';
import type { RedisConnection } from '../connection/connection.js';
import { scriptPerRun, serverTimeMs } from './counts.js';
import type { RegisteredRun, RunRegistry } from './registry.js';
import { forEachBounded } from '../connection/bounded.js';

/** One receipt that needs a person, as the index knows it (no receipt read). */
export interface AmbiguousEntry {
  /** The receipt's Redis key. */
  readonly redisKey: string;
  readonly tenantId: string;
  readonly runId: string;
  readonly toolName: string;
  readonly argsHash: string;
  /** When it became ambiguous (ms, server clock). */
  readonly sinceMs: number;
}

/** Which entries {@link listAmbiguousEntries} keeps. */
export interface AmbiguousFilter {
  /** Only this tenant's receipts (reads one registry shard instead of all). */
  readonly tenantId?: string;
  /** Only receipts of this tool. */
  readonly toolName?: string;
  /** Only receipts ambiguous for at least this long (ms). */
  readonly minAgeMs?: number;
}

/** What {@link listAmbiguousEntries} returns: every match, oldest first, and the server time of the read. */
export interface AmbiguousEntries {
  readonly entries: readonly AmbiguousEntry[];
  readonly readAtMs: number;
  /** Registered runs read. */
  readonly runs: number;
}

/** Oldest first, then by key: the order of the CLI's `ambiguous` and of every page built on it. */
export function compareAmbiguous(a: { sinceMs: number; redisKey: string }, b: { sinceMs: number; redisKey: string }): number {
  return a.sinceMs - b.sinceMs || (a.redisKey < b.redisKey ? -1 : a.redisKey > b.redisKey ? 1 : 0);
}

/** How many pages of runs are read at once. */
const PAGES_IN_FLIGHT = 4;

/**
 * Every ambiguous receipt under the registry's prefix that matches `filter`,
 * oldest first, read from the run registry and the runs' counting sets.
 * Receipts written before counting sets existed are not found (the CLI's
 * `ambiguous`, which walks the keyspace, finds them; `tool-receipts stats
 * --rebuild` indexes them once). A corrupt counting set throws
 * `CorruptReceiptError`.
 */
export async function listAmbiguousEntries(
  redis: RedisConnection,
  registry: RunRegistry,
  filter: AmbiguousFilter = {},
): Promise<AmbiguousEntries> {
  const prefix = registry.prefix;
  const toolPart = filter.toolName === undefined ? undefined : `${encodeKeyComponent(filter.toolName)}:`;
  const entries: AmbiguousEntry[] = [];
  let readAtMs = 0;
  let runs = 0;
  const readPage = async (page: RegisteredRun[]) => {
    runs += page.length;
    const replies = await scriptPerRun(
      redis,
      'ambiguous-run',
      page.map((run) => [receiptCountRedisKeyOfTag(prefix, run.tag)]),
      false,
    );
    replies.forEach((reply, i) => {
      const r = reply as (string | number)[];
      const nowMs = Number(r[0]);
      readAtMs = Math.max(readAtMs, nowMs);
      if (r.length < 3) return;
      const tag = page[i]!.tag;
      const bar = tag.indexOf('|');
      let tenantId: string;
      let runId: string;
      try {
        tenantId = decodeKeyComponent(tag.slice(0, bar));
        runId = decodeKeyComponent(tag.slice(bar + 1));
      } catch {
        return; // a hand-written registry member that no store wrote
      }
      for (let j = 1; j + 1 < r.length; j += 2) {
        // A compact receipt's member writes its digest as base64url (includes/count-score.lua): read back as the key's part.
        const member = callPartOfMember(String(r[j]));
        const sinceMs = Number(r[j + 1]);
        if (toolPart !== undefined && !member.startsWith(toolPart)) continue;
        if (filter.minAgeMs !== undefined && nowMs - sinceMs < filter.minAgeMs) continue;
        const colon = member.indexOf(':');
        if (colon < 0) continue;
        let toolName: string;
        let argsHash: string;
        try {
          toolName = decodeKeyComponent(member.slice(0, colon));
          argsHash = decodeKeyComponent(member.slice(colon + 1));
        } catch {
          continue;
        }
        // The member is the receipt key's part after the hash tag (includes/count-score.lua).
        entries.push({ redisKey: `${prefix}:rcpt:{${tag}}:${member}`, tenantId, runId, toolName, argsHash, sinceMs });
      }
    });
  };
  await forEachBounded(registry.runs(filter.tenantId), PAGES_IN_FLIGHT, readPage);
  return { entries: entries.sort(compareAmbiguous), readAtMs: readAtMs || (await serverTimeMs(redis)), runs };
}
