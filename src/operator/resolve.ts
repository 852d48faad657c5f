/**
 * An operator settles an ambiguous receipt: the one implementation behind the
 * CLI's `resolve` and the console's resolve, single and bulk. The write is
 * fenced on what the operator saw (attempts, and the epoch when given),
 * never on a fresh read, so a receipt that moved on is left alone and the
 * refusal says what changed; every write that lands is recorded in the
 * audit log.
 */
import type { AuditLog } from '../redis/operators/audit-log.js';
import { FencedOutError } from '../redis/errors.js';
import type { RedisConnection } from '../redis/connection/connection.js';
import { isApprovalStatus, type ReceiptRecord } from '../redis/receipts/reads/record.js';
import type { ReceiptStore, Resolution } from '../redis/receipts/store.js';
import { retryFailedJobs, type JobRetryReport } from '../bullmq/sweep/retry-jobs.js';
import { readReceipt } from './read-receipt.js';
import { resolveRefusal } from './resolve-refusal.js';
import { ResolveRefusedError } from './errors.js';

/** Where an operator's writes are recorded, and as whom. */
export interface AuditTrail {
  readonly log: AuditLog;
  /** Who is acting. */
  readonly actor: string;
  /** `cli`, `console`, or an embedder's name. */
  readonly source: string;
}

/** What {@link resolveReceipt} did. */
export interface ResolveOutcome {
  /** The receipt as read just before resolving. */
  readonly before: ReceiptRecord;
  /** The receipt as read just after; `null` if it was already gone. */
  readonly after: ReceiptRecord | null;
  /** With `retryJob`: what was done with each job recorded on the receipt. */
  readonly jobs?: JobRetryReport[];
  /** With `retryJob`, when no job was retried although the resolve landed: why (the call was claimed again since). */
  readonly jobsNotRetried?: string;
}

/** Options of {@link resolveReceipt}. */
export interface ResolveReceiptOptions {
  /** Appended to a refusal's message: how to look at the receipt again with the tool in use. */
  readonly lookAgain?: string;
  /** Where to record the write; nothing is recorded without it. */
  readonly audit?: AuditTrail;
  /** Then retry the failed BullMQ jobs recorded on the receipt, on this connection. */
  readonly retryJobsOn?: RedisConnection;
  /** Extra detail kept in the audit entry (a bulk action's name, say). */
  readonly auditDetail?: Readonly<Record<string, unknown>>;
}

/**
 * Settles the ambiguous receipt under `redisKey` as `resolution` says,
 * fenced on `resolution.attemptsSeen` (and `epochSeen`). Throws
 * `InvalidReceiptKeyError` or `ReceiptNotFoundError` for a key with no
 * receipt, and {@link ResolveRefusedError} (nothing written) when the store
 * refused, saying what differs (`resolveRefusal`): the receipt moved on, is
 * gone, is not ambiguous or is contested.
 * A write that lands is appended to `options.audit` (a failure to record it
 * is thrown after the write).
 */
export async function resolveReceipt(
  store: ReceiptStore,
  redisKey: string,
  resolution: Resolution,
  options: ResolveReceiptOptions = {},
): Promise<ResolveOutcome> {
  const before = await readReceipt(store, redisKey);
  if (isApprovalStatus(before.status)) {
    // The store's script would refuse it too (as corrupt); this names the state instead.
    const decide = before.status === 'awaiting_approval' ? '; approve or deny it (tool-receipts approve / deny)' : '';
    throw new ResolveRefusedError(
      redisKey,
      `${redisKey} is ${before.status}: the call has not run, so there is no attempt to resolve${decide}; nothing was written`,
      undefined,
      'approval_state',
    );
  }
  const seen = resolution.attemptsSeen;
  try {
    await store.resolve(before.key, resolution);
  } catch (err) {
    // Judged against the receipt as it is now: a verdict another operator gave since `before` is in its history.
    const now = err instanceof FencedOutError ? await store.inspect(before.key).catch(() => null) : null;
    throw resolveRefusal(redisKey, resolution, now ?? before, err, options.lookAgain);
  }
  const after = await store.inspect(before.key);
  if (options.audit) {
    await options.audit.log.append({
      actor: options.audit.actor,
      source: options.audit.source,
      action: 'resolve',
      receipts: [redisKey],
      detail: {
        outcome: resolution.outcome,
        attemptsSeen: seen,
        ...(resolution.epochSeen !== undefined ? { epochSeen: resolution.epochSeen } : {}),
        ...(resolution.outcome === 'failed' ? { error: resolution.error } : {}),
        ...options.auditDetail,
      },
    });
  }
  if (options.retryJobsOn === undefined || after === null) return { before, after };
  if (after.status === 'running') {
    // Claimed again between the resolve and this read (a redelivery, a resubmitted turn): the verdict stands, and the
    // new attempt goes on with the call; a retried job would only wait for it.
    const jobsNotRetried =
      `attempt ${after.attempts} of the call started right after the resolve, so its jobs were not retried; ` +
      'retry them once that attempt is settled, if they are still failed';
    return { before, after, jobsNotRetried };
  }
  const jobs = await retryJobs(options.retryJobsOn, after, options.audit);
  return { before, after, jobs };
}

/**
 * Retries the failed BullMQ jobs recorded on a settled receipt
 * (`retryFailedJobs`) and records the retry in the audit log when one was
 * retried. Throws `CallNotSettledError` for a receipt still running.
 */
export async function retryJobs(connection: RedisConnection, record: ReceiptRecord, audit?: AuditTrail): Promise<JobRetryReport[]> {
  const jobs = await retryFailedJobs(connection, record);
  const retried = jobs.filter((j) => j.action === 'retried').map((j) => j.job);
  if (audit && retried.length > 0) {
    await audit.log.append({
      actor: audit.actor,
      source: audit.source,
      action: 'retry-job',
      receipts: [record.redisKey],
      detail: { jobs: retried },
    });
  }
  return jobs;
}
