/**
 * What the console's lists read, each from an index: the ambiguous receipts
 * from the run registry and the counting sets, a page at a time by cursor,
 * the data every page reads through, and what the find box finds. Nothing
 * here walks the keyspace; the find box's lookups are in find.ts.
 */
import { compareAmbiguous, listAmbiguousEntries, type AmbiguousEntry, type AmbiguousFilter } from '../redis/runs/ambiguous-index.js';
import type { AuditLog } from '../redis/operators/audit-log.js';
import type { RedisConnection } from '../redis/connection/connection.js';
import type { AttemptJob, ReceiptRecord } from '../redis/receipts/reads/record.js';
import type { ReceiptStore } from '../redis/receipts/store.js';
import type { RunRegistry } from '../redis/runs/registry.js';

/** A BullMQ queue the console may look job ids up in. */
export interface ConsoleQueue {
  readonly name: string;
  /** The queue's BullMQ prefix; default `bull`. */
  readonly prefix?: string;
}

/** Everything the queries read through. */
export interface ConsoleData {
  readonly store: ReceiptStore;
  readonly redis: RedisConnection;
  readonly registry: RunRegistry;
  readonly audit: AuditLog;
  readonly queues: readonly ConsoleQueue[];
}

/** Receipts per page of the lists. */
export const PAGE_SIZE = 50;

/** Where a page of the ambiguous list starts: after this entry. */
export interface Cursor {
  readonly sinceMs: number;
  readonly redisKey: string;
}

export function cursorText(entry: Cursor): string {
  return `${entry.sinceMs}~${entry.redisKey}`;
}

export function parseCursor(text: string | undefined): Cursor | undefined {
  const match = text === undefined ? null : /^(\d{1,15})~(.+)$/.exec(text);
  return match ? { sinceMs: Number(match[1]), redisKey: match[2]! } : undefined;
}

/** `90s`, `15m`, `2h`, `3d` or a number of minutes, as ms; `undefined` for empty; a string saying what is wrong otherwise. */
export function parseAge(text: string | undefined): number | undefined | { problem: string } {
  if (text === undefined || text.trim() === '') return undefined;
  const match = /^\s*(\d{1,9})\s*(s|m|h|d)?\s*$/.exec(text);
  if (!match) return { problem: `age must be a number with s, m, h or d (15m, 2h), got ${JSON.stringify(text)}` };
  const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[(match[2] ?? 'm') as 's' | 'm' | 'h' | 'd'];
  return Number(match[1]) * unit;
}

/** A receipt that needs a person, with its receipt read (`null` when it went away since the index was read). */
export interface NeedsRow {
  readonly entry: AmbiguousEntry;
  readonly record: ReceiptRecord | null;
}

/** One page of the ambiguous receipts. */
export interface NeedsPage {
  readonly total: number;
  readonly rows: readonly NeedsRow[];
  /** The cursor of the next page; `undefined` on the last. */
  readonly next: Cursor | undefined;
  readonly readAtMs: number;
  readonly runs: number;
}

/**
 * The ambiguous receipts matching `filter`, oldest first, the page after
 * `after`: the index gives every match (and so the exact count), and only the
 * page's receipts are read.
 */
export async function needsPage(
  data: ConsoleData,
  filter: AmbiguousFilter,
  after: Cursor | undefined,
  size = PAGE_SIZE,
): Promise<NeedsPage> {
  const { entries, readAtMs, runs } = await listAmbiguousEntries(data.redis, data.registry, filter);
  const start = after === undefined ? 0 : entries.findIndex((e) => compareAmbiguous(e, after) > 0);
  const slice = start < 0 ? [] : entries.slice(start, start + size);
  const records = await data.store.inspectRedisKeys(slice.map((e) => e.redisKey));
  const last = slice[slice.length - 1];
  const more = start >= 0 && start + size < entries.length;
  return {
    total: entries.length,
    rows: slice.map((entry, i) => ({ entry, record: records[i] ?? null })),
    next: more && last ? { sinceMs: last.sinceMs, redisKey: last.redisKey } : undefined,
    readAtMs,
    runs,
  };
}

/** The job of the attempt that lost its lease: the one recorded for the receipt's current attempt. */
export function lostAttemptJob(record: ReceiptRecord): AttemptJob | undefined {
  return record.jobs.find((j) => j.attempt === record.attempts);
}

/** What one kind of lookup found for the text in the find box. */
export interface FindGroup {
  /** What the text was taken as. */
  readonly kind: 'receipt key' | 'run key' | 'idempotency key' | 'BullMQ job' | 'call id' | 'tenant' | 'run' | 'tool';
  /** How it was recognised and looked up, in one sentence. */
  readonly how: string;
  readonly receipts: readonly ReceiptRecord[];
  readonly runs: readonly { readonly tenantId: string; readonly runId: string }[];
  /** What else to say (a job found with no receipt, a limit reached). */
  readonly notes: readonly string[];
}

/** A group that lists nothing: spread under a group's `kind` and `how` (and its own `notes`, if any). */
export const EMPTY_GROUP = { receipts: [], runs: [], notes: [] } as const satisfies Pick<FindGroup, 'receipts' | 'runs' | 'notes'>;
