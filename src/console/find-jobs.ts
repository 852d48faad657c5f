/**
 * The find box's BullMQ lookup: a text taken as a job id in each queue the
 * console knows, or as a job key pasted whole, and the receipts of the job's
 * run that record it.
 */
import { Job, Queue } from 'bullmq';
import { toolJobDataSchema } from '../bullmq/job-data.js';
import { EMPTY_GROUP, type ConsoleData, type FindGroup } from './queries.js';

/**
 * A pasted BullMQ job key, `<prefix>:<queue>:<id>`, read from the right (a
 * queue name and a job id hold no colon; a prefix may): `undefined` unless
 * all three parts are non-empty, so `x::1` or `a:b:` never reach BullMQ,
 * which refuses an empty queue name.
 */
export function parseJobKey(text: string): { prefix: string; queue: string; id: string } | undefined {
  const last = text.lastIndexOf(':');
  if (last <= 0) return undefined;
  const before = text.lastIndexOf(':', last - 1);
  if (before <= 0) return undefined;
  const key = { prefix: text.slice(0, before), queue: text.slice(before + 1, last), id: text.slice(last + 1) };
  return key.queue !== '' && key.id !== '' ? key : undefined;
}

/** The queues a job id may belong to, with an optional `<prefix>:<queue>:<id>` key pasted whole. */
function jobCandidates(data: ConsoleData, q: string): { queue: string; prefix: string; id: string; pasted: boolean }[] {
  const pasted = parseJobKey(q);
  return [
    ...(pasted ? [{ ...pasted, pasted: true }] : []),
    ...data.queues.map((queue) => ({ queue: queue.name, prefix: queue.prefix ?? 'bull', id: q, pasted: false })),
  ];
}

/** A key that holds something other than a job: another type (a queue's event stream, its id counter), or a hash whose fields are not a job's JSON. */
function notAJob(err: unknown): boolean {
  return err instanceof SyntaxError || (err instanceof Error && /^WRONGTYPE\b/.test(err.message));
}

/** BullMQ jobs with this id (or this pasted job key) and the receipts that record them. */
export async function findJobs(data: ConsoleData, q: string): Promise<FindGroup[]> {
  const groups: FindGroup[] = [];
  for (const c of jobCandidates(data, q)) {
    const queue = new Queue(c.queue, { connection: data.redis as never, prefix: c.prefix });
    try {
      let job: Job | undefined;
      try {
        job = await Job.fromId(queue, c.id);
      } catch (err) {
        if (!notAJob(err)) throw err;
        if (c.pasted)
          groups.push({
            ...EMPTY_GROUP,
            kind: 'BullMQ job',
            how: `It has the shape of a BullMQ job key (<prefix>:<queue>:<id>), but that key of queue ${c.queue} holds no job.`,
          });
        continue;
      }
      if (!job) continue;
      const parsed = toolJobDataSchema.safeParse(job.data);
      const how = c.pasted
        ? `It has the shape of a BullMQ job key (<prefix>:<queue>:<id>); job ${c.id} was read from queue ${c.queue}, and its run's receipts (from the run index) that record it are listed.`
        : `Job ${c.id} exists in queue ${c.queue} (prefix ${c.prefix}); its run's receipts (from the run index) that record it are listed.`;
      if (!parsed.success) {
        groups.push({
          ...EMPTY_GROUP,
          kind: 'BullMQ job',
          how,
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
