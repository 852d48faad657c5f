/**
 * Bulk resolve by filter: a preview takes a snapshot of every receipt the
 * filter matches (key, attempts and epoch as seen), the operator names the
 * action and confirms, and each receipt of the snapshot is then resolved with
 * its own fence. A receipt that changed since the preview is skipped and
 * listed, so the preview's count is always what was resolved plus what was
 * skipped. The action is recorded in the audit log when it ends. Drafts and
 * running actions live in the console's memory.
 */
import { randomBytes } from 'node:crypto';
import { listAmbiguousEntries, type AmbiguousFilter } from '../redis/runs/ambiguous-index.js';
import { isAmbiguousRecord, isContestedRecord } from '../redis/receipts/reads/record.js';
import { RESOLUTION_BY_MAX, RESOLUTION_NOTE_MAX, type Resolution } from '../redis/receipts/store.js';
import { ReceiptNotFoundError, ResolveRefusedError } from '../operator/errors.js';
import { resolveReceipt, type AuditTrail } from '../operator/resolve.js';
import type { ConsoleData } from './queries.js';

/** Most receipts one bulk action may cover. */
export const MAX_BULK_RECEIPTS = 2_000;

/** A receipt as the preview saw it: the fence its resolve carries. */
export interface SnapshotEntry {
  readonly redisKey: string;
  readonly tenantId: string;
  readonly runId: string;
  readonly toolName: string;
  readonly attempts: number;
  readonly epoch: string;
  readonly sinceMs: number;
}

/** A preview waiting for confirmation. */
export interface BulkDraft {
  readonly id: string;
  readonly filter: AmbiguousFilter;
  /** The filter as the operator wrote it, for the history. */
  readonly filterText: Readonly<Record<string, string>>;
  readonly entries: readonly SnapshotEntry[];
  /** Matches beyond {@link MAX_BULK_RECEIPTS}, left out of the snapshot. */
  readonly leftOut: number;
  readonly readAtMs: number;
}

/** A confirmed action, running or done. */
export interface BulkJob {
  readonly id: string;
  readonly name: string;
  readonly outcome: Resolution['outcome'];
  readonly actor: string;
  readonly draft: BulkDraft;
  done: number;
  readonly resolved: string[];
  readonly skipped: { redisKey: string; why: string }[];
  finished: boolean;
  /** Set when the action stopped on an unexpected error. */
  error?: string;
}

const newId = () => randomBytes(9).toString('base64url');

/** The drafts and actions of one console. */
export class BulkActions {
  private readonly drafts = new Map<string, BulkDraft>();
  private readonly jobs = new Map<string, BulkJob>();

  constructor(private readonly data: ConsoleData) {}

  /** Reads every receipt the filter matches and keeps the snapshot as a draft. */
  async preview(filter: AmbiguousFilter, filterText: Record<string, string>): Promise<BulkDraft> {
    const { entries, readAtMs } = await listAmbiguousEntries(this.data.redis, this.data.registry, filter);
    const taken = entries.slice(0, MAX_BULK_RECEIPTS);
    const records = await this.data.store.inspectRedisKeys(taken.map((e) => e.redisKey));
    const snapshot: SnapshotEntry[] = [];
    records.forEach((record, i) => {
      // Only what a resolve can settle now: ambiguous and not contested.
      if (!record || !isAmbiguousRecord(record) || isContestedRecord(record)) return;
      const e = taken[i]!;
      snapshot.push({
        redisKey: e.redisKey,
        tenantId: e.tenantId,
        runId: e.runId,
        toolName: e.toolName,
        attempts: record.attempts,
        epoch: record.epoch,
        sinceMs: e.sinceMs,
      });
    });
    const draft: BulkDraft = { id: newId(), filter, filterText, entries: snapshot, leftOut: entries.length - taken.length, readAtMs };
    remember(this.drafts, draft.id, draft);
    return draft;
  }

  draft(id: string): BulkDraft | undefined {
    return this.drafts.get(id);
  }

  job(id: string): BulkJob | undefined {
    return this.jobs.get(id);
  }

  /**
   * Starts resolving every receipt of the draft with its own fence, and
   * returns at once; the action's progress is read with {@link job}.
   */
  start(
    draft: BulkDraft,
    name: string,
    template: { outcome: 'completed'; result: unknown } | { outcome: 'failed'; error: string },
    audit: AuditTrail,
  ): BulkJob {
    this.drafts.delete(draft.id);
    const job: BulkJob = {
      id: newId(),
      name,
      outcome: template.outcome,
      actor: audit.actor,
      draft,
      done: 0,
      resolved: [],
      skipped: [],
      finished: false,
    };
    remember(this.jobs, job.id, job);
    void this.run(job, template, audit);
    return job;
  }

  private async run(
    job: BulkJob,
    template: { outcome: 'completed'; result: unknown } | { outcome: 'failed'; error: string },
    audit: AuditTrail,
  ): Promise<void> {
    try {
      for (const entry of job.draft.entries) {
        const resolution: Resolution = {
          ...template,
          attemptsSeen: entry.attempts,
          ...(entry.epoch !== '' ? { epochSeen: entry.epoch } : {}),
          by: audit.actor.slice(0, RESOLUTION_BY_MAX),
          note: `bulk action: ${job.name}`.slice(0, RESOLUTION_NOTE_MAX),
        };
        try {
          await resolveReceipt(this.data.store, entry.redisKey, resolution);
          job.resolved.push(entry.redisKey);
        } catch (err) {
          // Refused (changed since the preview) or gone: skipped and listed; anything else stops the action.
          if (!(err instanceof ResolveRefusedError || err instanceof ReceiptNotFoundError)) throw err;
          job.skipped.push({ redisKey: entry.redisKey, why: err.message });
        }
        job.done++;
      }
    } catch (err) {
      job.error = err instanceof Error ? err.message : String(err);
    } finally {
      await audit.log
        .append({
          actor: audit.actor,
          source: audit.source,
          action: 'bulk-resolve',
          receipts: job.resolved,
          detail: {
            name: job.name,
            outcome: job.outcome,
            filter: job.draft.filterText,
            matched: job.draft.entries.length,
            resolved: job.resolved.length,
            skipped: job.skipped,
            ...(template.outcome === 'failed' ? { error: template.error } : {}),
            ...(job.error !== undefined ? { stoppedBy: job.error } : {}),
          },
        })
        .catch((err: unknown) => {
          job.error ??= `the action ran but could not be recorded in the audit log: ${err instanceof Error ? err.message : String(err)}`;
        });
      job.finished = true;
    }
  }
}

/** Keeps at most 50 entries, dropping the oldest. */
function remember<T>(map: Map<string, T>, id: string, value: T): void {
  map.set(id, value);
  while (map.size > 50) map.delete(map.keys().next().value as string);
}
