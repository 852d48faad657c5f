/**
 * The find box: the text tried as each kind of identifier it can be (a
 * receipt, run or idempotency key; a BullMQ job id or pasted job key; a
 * tenant, a run, a tool, a call id), each looked up by its own index. Any
 * text gives groups or none, never an error from below (a pasted key of
 * BullMQ's own streams or counters included); a malformed receipt key is a
 * typed error.
 */
import { Job, Queue } from 'bullmq';
import { toolJobDataSchema } from '../bullmq/job-data.js';
import { idempotencyKeyFor } from '../core/identity.js';
import { listAmbiguousEntries, type AmbiguousEntry } from '../redis/runs/ambiguous-index.js';
import { receiptsConnection } from '../redis/connection/connection.js';
import { encodeKeyComponent, parseRunIndexRedisKey } from '../redis/keys.js';
import type { ReceiptRecord } from '../redis/receipts/reads/record.js';
import { RUN_REGISTRY_SHARDS, runRegistryRedisKey } from '../redis/runs/registry.js';
import { parseReceiptRedisKey } from '../operator/receipt-key.js';
import { findJobs } from './find-jobs.js';
import { EMPTY_GROUP, type ConsoleData, type FindGroup } from './queries.js';

/** Most runs listed for a tenant or run id. */
const RUNS_LISTED = 200;

/**
 * Everything the find box's text can be: tried as each kind it could be,
 * each by its own index, and every kind that found something is returned.
 * Keys (receipt, run, idempotency) are read without the spaces around them,
 * which no key has. Ids (a job id, a tenant, a run, a tool, a call id) are
 * exact, so `"acme "` is not `"acme"`: only when the text as pasted finds
 * nothing is it tried without its surrounding spaces, and each group found
 * that way says so.
 */
export async function find(data: ConsoleData, text: string): Promise<FindGroup[]> {
  const q = text.trim();
  if (q === '') return [];
  const byKey = await findKey(data, q);
  if (byKey) return [byKey];
  // Read once, and only for the kinds that need it: the walk costs one script per registered run.
  let ambiguous: AmbiguousEntry[] | undefined;
  const needingAPerson = async () => (ambiguous ??= [...(await listAmbiguousEntries(data.redis, data.registry)).entries]);
  const exact = await findId(data, text, needingAPerson);
  if (exact.length > 0 || q === text) return exact;
  const note = `Nothing matched the text as pasted; without the spaces around it, ${JSON.stringify(q)} finds this.`;
  return (await findId(data, q, needingAPerson)).map((g) => ({ ...g, notes: [note, ...g.notes] }));
}

/** The text as a receipt key, a run key or an idempotency key, when it has one's shape. */
async function findKey(data: ConsoleData, q: string): Promise<FindGroup | undefined> {
  const prefix = data.store.prefix;
  if (q.startsWith(`${prefix}:rcpt:`)) {
    const { key } = parseReceiptRedisKey(q, prefix);
    const record = await data.store.inspect(key);
    return {
      ...EMPTY_GROUP,
      kind: 'receipt key',
      how: 'It has the shape of a receipt key under this prefix; the receipt was read by its key.',
      receipts: record ? [record] : [],
      notes: record ? [] : ['No receipt exists under this key (never claimed, or expired).'],
    };
  }
  const runKey = parseRunIndexRedisKey(prefix, q);
  if (runKey)
    return {
      ...EMPTY_GROUP,
      kind: 'run key',
      how: "It is a run index key under this prefix; the run's receipts are listed from it.",
      runs: [runKey],
    };
  if (/^trc_[0-9a-f]{40}$/.test(q)) {
    const hits = (await listAmbiguousEntries(data.redis, data.registry)).entries.filter((e) => idempotencyKeyFor(e) === q);
    return {
      ...EMPTY_GROUP,
      kind: 'idempotency key',
      how:
        'It has the shape of an idempotency key (trc_ and 40 hex digits), a one-way digest of the receipt key: it was ' +
        'compared with the key of every receipt that needs a person (from the ambiguous index). A settled receipt is ' +
        'not indexed by it: find it by its run, job or receipt key.',
      receipts: await readAll(
        data,
        hits.map((e) => e.redisKey),
      ),
    };
  }
  return undefined;
}

/** The text, exactly, as a BullMQ job id or key, a tenant, a run id, then (when nothing else matched) a tool or a call id. */
async function findId(data: ConsoleData, q: string, needingAPerson: () => Promise<AmbiguousEntry[]>): Promise<FindGroup[]> {
  const groups: FindGroup[] = await findJobs(data, q);
  const tenantRuns = await runsOfTenant(data, q);
  if (tenantRuns.length > 0) {
    groups.push({
      ...EMPTY_GROUP,
      kind: 'tenant',
      how: "A tenant of that name has registered runs: they were read from the tenant's shard of the run registry.",
      runs: tenantRuns.slice(0, RUNS_LISTED),
      notes: tenantRuns.length > RUNS_LISTED ? [`Showing ${RUNS_LISTED} of ${tenantRuns.length} runs.`] : [],
    });
  }
  const runs = await runsNamed(data, q);
  if (runs.length > 0) {
    groups.push({
      ...EMPTY_GROUP,
      kind: 'run',
      how: 'Runs of that id are registered: each shard of the run registry was searched for it (ZSCAN with a pattern; no receipt read).',
      runs: runs.slice(0, RUNS_LISTED),
    });
  }
  if (groups.length > 0) return groups;
  // Only when nothing else matched: these read every registered run's counting set.
  const ofTool = (await needingAPerson()).filter((e) => e.toolName === q);
  if (ofTool.length > 0) {
    return [
      {
        ...EMPTY_GROUP,
        kind: 'tool',
        how: 'Receipts that need a person are of a tool of that name (from the ambiguous index; there is no index of every receipt by tool).',
        receipts: await readAll(
          data,
          ofTool.slice(0, 100).map((e) => e.redisKey),
        ),
        notes: ofTool.length > 100 ? [`Showing 100 of ${ofTool.length}.`] : [],
      },
    ];
  }
  // Last: it reads the jobs of the receipts that need a person.
  const byCall = await findByCallId(data, q, await needingAPerson());
  return byCall ? [byCall] : [];
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
