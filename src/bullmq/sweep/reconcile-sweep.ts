/**
 * A sweep over the ambiguous receipts whose jobs already failed: each call
 * whose tool has a `reconcile` is asked again (a provider that was down may
 * answer now), and when it settles, the failed jobs recorded on the receipt
 * are retried so their turns finish. The same sweep removes the outcome rows
 * of transactional tools that outlived their receipts. Run it from a BullMQ job scheduler with
 * {@link reconcileSweepProcessor}, or call {@link reconcileAmbiguous} directly.
 */
import { Job, Queue } from 'bullmq';
import { checkOptions } from '../../core/options.js';
import { RECONCILE_SWEEP_SCHEMA } from '../options.js';
import { pino, type Logger } from 'pino';
import { sha256Digest, toolCallArgsHash, type DigestFn, type ToolCallReceiptKey } from '../../core/identity.js';
import type { RedisConnection } from '../../redis/connection/connection.js';
import type { DurabilityOptions } from '../../redis/durability/durability.js';
import type { AttemptJob, ReceiptRecord } from '../../redis/receipts/reads/record.js';
import { ReceiptsKeyspace } from '../../redis/receipts/keyspace.js';
import type { VerdictToRecord } from '../../redis/receipts/transitions/reconcile-store.js';
import type { AnyToolDefinition } from '../tools/define-tool.js';
import { parseToolJobData, type ToolCall, type ToolJobData } from '../../core/job-data.js';
import { destructiveMatcher } from '../../repair/destructive.js';
import { repairInput } from '../tools/input-repair.js';
import { resultShaper, type ResultShapingOptions } from '../tools/result-shaping.js';
import { retryFailedJobs, type JobRetryReport } from './retry-jobs.js';
import { askReconcile, lostAttemptContext, reconcileLeaseMs, reconcileTimeoutOf } from '../outcomes/expired.js';
import { sweepExpiredOutcomes } from '../outcomes/transactional.js';

/** Options of {@link reconcileAmbiguous}: the workers' own, so keys, digests and results match theirs. */
export interface ReconcileSweepOptions extends ResultShapingOptions {
  /** The receipts' connection; the recorded jobs' queues are reached through it too. */
  readonly redis: RedisConnection;
  /** The workers' tools; only those with a `reconcile` are asked. */
  readonly tools: Iterable<AnyToolDefinition>;
  readonly prefix?: string;
  readonly retentionMs?: number;
  /** The workers' `leaseMs`: the reconcile lease is the tool's timeout plus this. Default 30 s. */
  readonly leaseMs?: number;
  /** The workers' digest; default {@link sha256Digest}. */
  readonly digest?: DigestFn;
  /** The workers' `destructiveTools`: a failed job's call is read back as they read it (never reshaped). */
  readonly destructiveTools?: readonly string[] | undefined;
  /** The workers' durability: verdicts that settle a call wait for it. */
  readonly durability?: DurabilityOptions;
  /** The longest each receipts command may go without a reply; default 5 s (see `withToolReceipts`). */
  readonly commandTimeoutMs?: number;
  /** Recorded as `reconciled_by`. Default `reconcile-sweep:<pid>`. */
  readonly owner?: string;
  readonly logger?: Logger;
}

/** What the sweep did with one ambiguous receipt. */
export interface SweptReceipt {
  readonly redisKey: string;
  /** The verdict, or `skipped` with the reason (no reconcile, its job is not failed, …). */
  readonly outcome: 'completed' | 'not_started' | 'unknown' | 'skipped';
  readonly reason?: string;
  /** For a settled call: what was done with each job recorded on it. */
  readonly jobs?: JobRetryReport[];
}

/** The call of a failed job that a receipt belongs to, found by recomputing its receipt key. */
interface FoundCall {
  readonly job: Job;
  readonly data: ToolJobData;
  readonly call: ToolCall;
  readonly args: unknown;
}

/**
 * Ask again about every ambiguous receipt whose tool has a `reconcile` and
 * whose latest attempt's job has failed; settle what the tool can now tell,
 * and retry the failed jobs of each call it settled (`completed` replays the
 * result; `not_started` fails the receipt as never started, so the retried
 * job runs it as the next attempt). Receipts whose job is still live, or
 * whose call cannot be found in its job (its arguments needed a reshaper,
 * say), are skipped and left for a person.
 */
export async function reconcileAmbiguous(
  options: ReconcileSweepOptions,
  signal: AbortSignal = new AbortController().signal,
): Promise<SweptReceipt[]> {
  checkOptions<ReconcileSweepOptions>('reconcileAmbiguous', options, RECONCILE_SWEEP_SCHEMA);
  const tools = new Map([...options.tools].map((t) => [t.name, t]));
  const destructivePattern = destructiveMatcher(options.destructiveTools ?? []);
  const isDestructive = (tool: AnyToolDefinition) => tool.destructive || destructivePattern(tool.name);
  // Checked above, the keyspace's rules among them: made from them without a second parse.
  const owner = options.owner ?? `reconcile-sweep:${process.pid}`;
  const { prefix, retentionMs, leaseMs, commandTimeoutMs, durability } = options;
  const keyspace = ReceiptsKeyspace.ofChecked(
    options.redis,
    { prefix, retentionMs, leaseMs, commandTimeoutMs, durability, owner },
    'reconcileAmbiguous',
  );
  const { receipts: store, reconciles } = keyspace;
  const log = options.logger ?? pino({ name: 'bullmq-tool-receipts' });
  const shape = resultShaper(options);
  const swept: SweptReceipt[] = [];
  for (const record of await store.listAmbiguous()) {
    const tool = tools.get(record.key.toolName);
    const skip = (reason: string) => swept.push({ redisKey: record.redisKey, outcome: 'skipped', reason });
    if (!tool?.reconcile) {
      skip('its tool has no reconcile');
      continue;
    }
    const found = await failedJobCall(options, record, tool, isDestructive, signal);
    if (typeof found === 'string') {
      skip(found);
      continue;
    }
    const lost = { attempt: record.attempts, epoch: record.epoch };
    const start = await reconciles.begin(record.key, lost, reconcileLeaseMs(tool, keyspace.settings.leaseMs), owner, {
      again: true,
    });
    if (start.kind !== 'begun') {
      skip(start.kind === 'busy' ? 'a worker is reconciling it' : 'it moved on');
      continue;
    }
    const context = lostAttemptContext({
      ...found,
      key: record.key,
      attempt: record.attempts,
      attemptStartedMs: start.attemptStartedMs,
      logger: log,
    });
    const answer = await askReconcile(tool, found.args, context, signal, reconcileTimeoutOf(tool));
    const verdict: VerdictToRecord =
      answer.status === 'completed'
        ? { verdict: 'completed', result: await shape(answer.result, found.call, tool, found.data) }
        : answer.status === 'not_started'
          ? { verdict: 'not_started' }
          : { verdict: 'unknown', note: answer.reason ?? 'the tool could not tell' };
    try {
      await reconciles.settle(record.key, { ...lost, reconciles: start.reconciles, worker: owner, begunMs: start.nowMs }, verdict);
    } catch (error) {
      log.warn({ receiptKey: record.redisKey, error: (error as Error).message }, 'reconcile sweep: verdict not recorded');
      skip('it moved on');
      continue;
    }
    log.info(
      { receiptKey: record.redisKey, reconciled: verdict.verdict, attempt: record.attempts },
      `tool call reconciled: ${verdict.verdict}`,
    );
    const settled = verdict.verdict === 'unknown' ? null : await store.inspect(record.key);
    const jobs = settled ? await retryFailedJobs(options.redis, settled) : undefined;
    swept.push({ redisKey: record.redisKey, outcome: verdict.verdict, ...(jobs ? { jobs } : {}) });
  }
  const retention = { retentionMs: keyspace.settings.retentionMs, leaseMs: keyspace.settings.leaseMs };
  for (const report of await sweepExpiredOutcomes(tools.values(), retention)) {
    log.info({ ...report }, 'reconcile sweep: expired outcome rows of transactional tools removed');
  }
  return swept;
}

/** The failed job of the receipt's latest attempt and the call in it, or why there is none. */
async function failedJobCall(
  options: ReconcileSweepOptions,
  record: ReceiptRecord,
  tool: AnyToolDefinition,
  isDestructive: (tool: AnyToolDefinition) => boolean,
  signal: AbortSignal,
): Promise<FoundCall | string> {
  const recorded: AttemptJob | undefined = record.jobs.at(-1);
  if (!recorded) return 'no job is recorded on it';
  const queue = new Queue(recorded.queue, { connection: options.redis, prefix: recorded.prefix });
  try {
    const job = await Job.fromId(queue, recorded.id);
    const state = job ? await job.getState() : 'missing';
    if (!job || state !== 'failed') return `its job is ${state}`;
    let data: ToolJobData;
    try {
      data = parseToolJobData(job.data);
    } catch {
      return 'its job data is not valid';
    }
    for (const call of data.calls.filter((c) => c.name === tool.name)) {
      const prepared = await repairInput(call, tool, { isDestructive }, { signal });
      if (!prepared.ok) continue;
      const key: ToolCallReceiptKey = {
        ...record.key,
        argsHash: await toolCallArgsHash(prepared.rawInput, options.digest ?? sha256Digest),
      };
      if (key.argsHash === record.key.argsHash && key.tenantId === data.tenantId && key.runId === data.runId) {
        return { job, data, call, args: prepared.args };
      }
    }
    return 'its call was not found in its job';
  } finally {
    await queue.close();
  }
}

/**
 * A BullMQ processor that runs {@link reconcileAmbiguous}: give it to a
 * Worker on a queue of its own and schedule it with
 * `queue.upsertJobScheduler('tool-receipts-reconcile', { every: 60_000 })`.
 * The job's return value is the sweep's report.
 */
export function reconcileSweepProcessor(options: ReconcileSweepOptions) {
  checkOptions<ReconcileSweepOptions>('reconcileSweepProcessor', options, RECONCILE_SWEEP_SCHEMA);
  return (_job: Job, _token?: string, signal?: AbortSignal): Promise<SweptReceipt[]> => reconcileAmbiguous(options, signal);
}
