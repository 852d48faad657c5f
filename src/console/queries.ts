/**
 * What the console's pages read, each from an index: the ambiguous receipts
 * from the run registry and the counting sets, a run from its run index, a
 * receipt by its key, a BullMQ job by id from its queue, counts from the
 * counting sets. Nothing here walks the keyspace.
 */
import { Job, Queue } from 'bullmq';
import { idempotencyKeyFor } from '../bullmq/call-context.js';
import { toolJobDataSchema } from '../bullmq/job-data.js';
import { compareAmbiguous, listAmbiguousEntries, type AmbiguousEntry, type AmbiguousFilter } from '../redis/ambiguous-index.js';
import type { AuditLog } from '../redis/audit-log.js';
import { receiptsConnection, type RedisConnection } from '../redis/connection.js';
import { encodeKeyComponent, parseRunIndexRedisKey } from '../redis/keys.js';
import type { AttemptJob, ReceiptRecord } from '../redis/receipt-record.js';
import type { ReceiptStore } from '../redis/receipt-store.js';
import { RUN_REGISTRY_SHARDS, runRegistryRedisKey, type RunRegistry } from '../redis/run-registry.js';
import { parseReceiptRedisKey } from '../operator/receipt-key.js';

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

/** Most runs listed for a tenant or run id. */
const RUNS_LISTED = 200;

/**
 * Everything the find box's text can be: tried as each kind it could be,
 * each by its own index, and every kind that found something is returned.
 */
export async function find(data: ConsoleData, text: string): Promise<FindGroup[]> {
  const q = text.trim();
  if (q === '') return [];
  const groups: FindGroup[] = [];
  const prefix = data.store.prefix;
  const empty = { receipts: [], runs: [], notes: [] };

  if (q.startsWith(`${prefix}:rcpt:`)) {
    const { key } = parseReceiptRedisKey(q, prefix);
    const record = await data.store.inspect(key);
    groups.push({
      ...empty,
      kind: 'receipt key',
      how: 'It has the shape of a receipt key under this prefix; the receipt was read by its key.',
      receipts: record ? [record] : [],
      notes: record ? [] : ['No receipt exists under this key (never claimed, or expired).'],
    });
    return groups;
  }
  const runKey = parseRunIndexRedisKey(prefix, q);
  if (runKey) {
    groups.push({
      ...empty,
      kind: 'run key',
      how: "It is a run index key under this prefix; the run's receipts are listed from it.",
      runs: [runKey],
    });
    return groups;
  }
  // Read once, and only for the kinds that need it: the walk costs one script per registered run.
  let ambiguous: AmbiguousEntry[] | undefined;
  const needingAPerson = async () => (ambiguous ??= [...(await listAmbiguousEntries(data.redis, data.registry)).entries]);

  if (/^trc_[0-9a-f]{40}$/.test(q)) {
    const hits = (await needingAPerson()).filter((e) => idempotencyKeyFor(e) === q);
    groups.push({
      ...empty,
      kind: 'idempotency key',
      how:
        'It has the shape of an idempotency key (trc_ and 40 hex digits), a one-way digest of the receipt key: it was ' +
        'compared with the key of every receipt that needs a person (from the ambiguous index). A settled receipt is ' +
        'not indexed by it: find it by its run, job or receipt key.',
      receipts: await readAll(
        data,
        hits.map((e) => e.redisKey),
      ),
    });
    return groups;
  }

  const jobs = await findJobs(data, q);
  if (jobs.length > 0) groups.push(...jobs);

  const tenantRuns = await runsOfTenant(data, q);
  if (tenantRuns.length > 0) {
    groups.push({
      ...empty,
      kind: 'tenant',
      how: "A tenant of that name has registered runs: they were read from the tenant's shard of the run registry.",
      runs: tenantRuns.slice(0, RUNS_LISTED),
      notes: tenantRuns.length > RUNS_LISTED ? [`Showing ${RUNS_LISTED} of ${tenantRuns.length} runs.`] : [],
    });
  }
  const runs = await runsNamed(data, q);
  if (runs.length > 0) {
    groups.push({
      ...empty,
      kind: 'run',
      how: 'Runs of that id are registered: each shard of the run registry was searched for it (ZSCAN with a pattern; no receipt read).',
      runs: runs.slice(0, RUNS_LISTED),
    });
  }
  if (groups.length > 0) return groups;
  // Only when nothing else matched: these read every registered run's counting set.
  const ofTool = (await needingAPerson()).filter((e) => e.toolName === q);
  if (ofTool.length > 0) {
    groups.push({
      ...empty,
      kind: 'tool',
      how: 'Receipts that need a person are of a tool of that name (from the ambiguous index; there is no index of every receipt by tool).',
      receipts: await readAll(
        data,
        ofTool.slice(0, 100).map((e) => e.redisKey),
      ),
      notes: ofTool.length > 100 ? [`Showing 100 of ${ofTool.length}.`] : [],
    });
  }
  if (groups.length === 0) {
    // Last: it reads the jobs of the receipts that need a person.
    const byCall = await findByCallId(data, q, await needingAPerson());
    if (byCall) groups.push(byCall);
  }
  return groups;
}

async function readAll(data: ConsoleData, redisKeys: readonly string[]): Promise<ReceiptRecord[]> {
  return (await data.store.inspectRedisKeys(redisKeys)).filter((r): r is ReceiptRecord => r !== null);
}

/** The tenant's registered runs, from its registry shard. */
async function runsOfTenant(data: ConsoleData, tenantId: string): Promise<{ tenantId: string; runId: string }[]> {
  const found: { tenantId: string; runId: string }[] = [];
  for await (const page of data.registry.runs(tenantId)) {
    for (const run of page) {
      const parsed = parseRunIndexRedisKey(data.store.prefix, `${data.store.prefix}:run:{${run.tag}}`);
      if (parsed) found.push(parsed);
    }
    if (found.length > RUNS_LISTED) break;
  }
  return found;
}

/** Registered runs whose run id is `runId`, whatever their tenant: a ZSCAN of each registry shard. */
async function runsNamed(data: ConsoleData, runId: string): Promise<{ tenantId: string; runId: string }[]> {
  const pattern = `*|${encodeKeyComponent(runId).replace(/[*?[\]\\]/g, '\\$&')}`;
  const found: { tenantId: string; runId: string }[] = [];
  for (let shard = 0; shard < RUN_REGISTRY_SHARDS; shard++) {
    let cursor = '0';
    do {
      const shardKey = runRegistryRedisKey(data.store.prefix, shard);
      const [next, flat] = (await receiptsConnection(data.redis).command(
        'ZSCAN',
        [shardKey, cursor, 'MATCH', pattern, 'COUNT', 1000],
        shardKey,
      )) as [string, string[]];
      cursor = String(next);
      for (let i = 0; i < flat.length; i += 2) {
        const parsed = parseRunIndexRedisKey(data.store.prefix, `${data.store.prefix}:run:{${flat[i]}}`);
        if (parsed && parsed.runId === runId) found.push(parsed);
      }
    } while (cursor !== '0' && found.length <= RUNS_LISTED);
  }
  return found;
}

/** The queues a job id may belong to, with an optional `<prefix>:<queue>:<id>` key pasted whole. */
function jobCandidates(data: ConsoleData, q: string): { queue: string; prefix: string; id: string; pasted: boolean }[] {
  const candidates: { queue: string; prefix: string; id: string; pasted: boolean }[] = [];
  const last = q.lastIndexOf(':');
  const before = last > 0 ? q.lastIndexOf(':', last - 1) : -1;
  if (before > 0 && last < q.length - 1) {
    candidates.push({ prefix: q.slice(0, before), queue: q.slice(before + 1, last), id: q.slice(last + 1), pasted: true });
  }
  for (const queue of data.queues) candidates.push({ queue: queue.name, prefix: queue.prefix ?? 'bull', id: q, pasted: false });
  return candidates;
}

/** BullMQ jobs with this id (or this pasted job key) and the receipts that record them. */
async function findJobs(data: ConsoleData, q: string): Promise<FindGroup[]> {
  const groups: FindGroup[] = [];
  for (const c of jobCandidates(data, q)) {
    const queue = new Queue(c.queue, { connection: data.redis as never, prefix: c.prefix });
    try {
      const job = await Job.fromId(queue, c.id);
      if (!job) continue;
      const parsed = toolJobDataSchema.safeParse(job.data);
      const how = c.pasted
        ? `It has the shape of a BullMQ job key (<prefix>:<queue>:<id>); job ${c.id} was read from queue ${c.queue}, and its run's receipts (from the run index) that record it are listed.`
        : `Job ${c.id} exists in queue ${c.queue} (prefix ${c.prefix}); its run's receipts (from the run index) that record it are listed.`;
      if (!parsed.success) {
        groups.push({
          kind: 'BullMQ job',
          how,
          receipts: [],
          runs: [],
          notes: [`Job ${c.id} of queue ${c.queue} has no tool-call data this console can read.`],
        });
        continue;
      }
      const { tenantId, runId } = parsed.data;
      const receipts = (await data.store.listRun(tenantId, runId)).filter((r) =>
        [...r.jobs, ...r.metJobs].some((j) => j.id === c.id && j.queue === c.queue && j.prefix === c.prefix),
      );
      groups.push({
        kind: 'BullMQ job',
        how,
        receipts,
        runs: [{ tenantId, runId }],
        notes:
          receipts.length === 0
            ? [`No receipt of run ${runId} records job ${c.id} (its calls may not have been claimed yet, or their receipts expired).`]
            : [],
      });
    } finally {
      await queue.close();
    }
  }
  return groups;
}

/** Receipts that need a person whose jobs a call-id search reads, at most. */
const CALL_ID_RECEIPTS = 200;

/**
 * A model's tool call id: looked for in the jobs recorded on the (oldest
 * {@link CALL_ID_RECEIPTS}) receipts that need a person, whose data names each
 * call's id and tool.
 */
async function findByCallId(data: ConsoleData, q: string, entries: readonly AmbiguousEntry[]): Promise<FindGroup | undefined> {
  const records = await readAll(
    data,
    entries.slice(0, CALL_ID_RECEIPTS).map((e) => e.redisKey),
  );
  const hits: ReceiptRecord[] = [];
  const queues = new Map<string, Queue>();
  try {
    for (const record of records) {
      for (const j of [...record.jobs, ...record.metJobs]) {
        const id = JSON.stringify([j.prefix, j.queue]);
        let queue = queues.get(id);
        if (!queue) queues.set(id, (queue = new Queue(j.queue, { connection: data.redis as never, prefix: j.prefix })));
        const job = await Job.fromId(queue, j.id);
        const calls = toolJobDataSchema.safeParse(job?.data);
        if (calls.success && calls.data.calls.some((c) => c.id === q && c.name === record.key.toolName)) {
          hits.push(record);
          break;
        }
      }
    }
  } finally {
    await Promise.all([...queues.values()].map((queue) => queue.close()));
  }
  if (hits.length === 0) return undefined;
  return {
    kind: 'call id',
    how: "A tool call of that id is in the data of a BullMQ job recorded on a receipt that needs a person (each such receipt's jobs were read).",
    receipts: hits,
    runs: [],
    notes: [],
  };
}
