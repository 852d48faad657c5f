/**
 * `withToolReceipts`: checks its options once, makes the receipts keyspace,
 * and returns the BullMQ processor: each job's data checked, then its turn
 * (its calls in order, or side by side where allowed) run.
 */
import type { Job } from 'bullmq';
import { checkOptions } from '../core/options.js';
import { TOOL_RECEIPTS_SCHEMA, type ToolReceiptsOptions } from './options.js';
import { pino } from 'pino';
import { sha256Digest } from '../core/identity.js';
import type { BreakerStore } from '../redis/receipts/transitions/breaker-store.js';
import type { ReceiptStore } from '../redis/receipts/store.js';
import { ReceiptsKeyspace } from '../redis/receipts/keyspace.js';
import type { AnyToolDefinition } from './tools/define-tool.js';
import { JobLockLostError, unrecoverable } from './errors.js';
import { ToolReceiptsEvents } from './events.js';
import { CallFactsSource, NOOP_OBSERVER } from './call/facts.js';
import {
  InvalidJobDataError,
  parseToolJobData,
  type ToolCall,
  type ToolJobData,
  type ToolJobResult,
  type ToolResultBlock,
} from '../core/job-data.js';
import { keepPartialResults } from './outcomes/ambiguity.js';
import { comeBackSoon, parkJobOnServerClock } from './turn/park-job.js';
import type { CallRuntime, JobScope } from './runtime.js';
import { endingOf } from './outcomes/infrastructure.js';
import { startUpCheck } from './outcomes/transactional.js';
import { readToolResultTool, resultShaperOf } from './tools/result-shaping.js';
import { inputPreparer, type InputRepairOptions } from './tools/input.js';
import { LazyAbort } from './call/execution.js';
import { throwIfInterrupted } from './call/interruption.js';
import { interruptedEnding, runTurn } from './turn/turn.js';
import { recordedEffectOf } from '../core/tool-effect.js';
import { settlesExpired } from './outcomes/failure.js';
import type { ClaimOptions } from '../redis/receipts/store.js';
import type { AttemptJob } from '../redis/receipts/reads/record.js';
import { destructiveMatcher } from '../repair/destructive.js';
import { assertUniqueToolNames } from '../repair/tool-names.js';
import { LimitStore } from '../limits/limit-store.js';
import { WorkerLimits } from '../limits/call-limits.js';
import { ApprovalGate } from '../approvals/gate.js';
import { approvalRuntime } from './outcomes/approval.js';

export type { ToolReceiptsOptions } from './options.js';

/**
 * What {@link ToolReceiptsProcessor.attach} needs of a BullMQ `Worker`: its
 * `lockRenewalFailed` event. Any Worker has it, whichever backend (Redis or
 * PostgreSQL) and BullMQ major it runs on.
 */
export interface LockRenewalEvents {
  on(event: 'lockRenewalFailed', listener: (jobIds: string[]) => void): unknown;
  off(event: 'lockRenewalFailed', listener: (jobIds: string[]) => void): unknown;
}

/** The processor, plus what a host needs to wire it to a Worker and observe it. */
export interface ToolReceiptsProcessor {
  (job: Job, token: string | undefined, signal?: AbortSignal): Promise<ToolJobResult>;
  readonly events: ToolReceiptsEvents;
  /** The receipts keyspace the processor made from its options: one channel, shared by `store`, `breaker` and the reconcile side. */
  readonly keyspace: ReceiptsKeyspace;
  readonly store: ReceiptStore;
  readonly breaker: BreakerStore;
  /** The worker's limits and the store of their counts; `undefined` when it has none. */
  readonly limits: WorkerLimits | undefined;
  /**
   * Listen to the worker's `lockRenewalFailed`: a job whose BullMQ lock could
   * not be renewed may already be running elsewhere, so its in-flight tool
   * calls are aborted. Returns a function that detaches.
   */
  attach(worker: LockRenewalEvents): () => void;
  /**
   * Resolves once the receipts Redis answers and can run the package's
   * scripts (one PING within `commandTimeoutMs`, then the scripts loaded on
   * every master; no key is written), and every transactional tool's
   * database has its outcome table (checked, writing nothing, as soon as the
   * processor is made). Rejects with `redis.unavailable` naming where the
   * receipts client connects (password masked), or with
   * `transactional.table_missing`, whose message prints the
   * `tool-receipts migrate` command, or `transactional.table_mismatch`.
   * Await it before starting the Worker. A check that failed is made again
   * on the next call (and the next job meets the same failure on its own).
   */
  ready(): Promise<void>;
}

/**
 * Wrap tools into a BullMQ processor that runs each call's side effect at
 * most once. Give it to `new Worker(queue, processor, …)` and call
 * `processor.attach(worker)`.
 *
 * The processor is declared with three parameters so BullMQ passes its
 * AbortSignal (BullMQ only does so for processors of length ≥ 3).
 */
export function withToolReceipts(options: ToolReceiptsOptions): ToolReceiptsProcessor {
  checkOptions<ToolReceiptsOptions>('withToolReceipts', options, TOOL_RECEIPTS_SCHEMA);
  const toolList = [...options.tools];
  if (options.resultStore) toolList.push(readToolResultTool(options.resultStore, options.maxResultChars));
  assertUniqueToolNames(toolList);
  const tools = new Map(toolList.map((tool) => [tool.name, tool]));
  // The options were checked above, the keyspace's rules among them: it is made from them without a second parse.
  const keyspace = ReceiptsKeyspace.ofChecked(options.redis, options, 'withToolReceipts');
  const store = keyspace.receipts;
  const limits = workerLimitsOf(keyspace, options, toolList);
  const events = options.events ?? new ToolReceiptsEvents();
  const logger = options.logger ?? pino({ name: 'bullmq-tool-receipts' });
  const lockLost = new Map<string, LazyAbort>();
  const destructivePattern = destructiveMatcher(options.destructiveTools ?? []);
  const repairOptions: InputRepairOptions = {
    isDestructive: (tool) => tool.destructive || destructivePattern(tool.name),
    reshaper: options.reshaper,
    maxAttempts: options.maxRepairAttempts,
    backendModel: options.backendModel,
  };

  options.telemetry?.bind?.({ redis: options.redis, store, limits });
  // The tools' approval rules (each tool's own over these options'); no gate when none has one.
  const approvals = approvalRuntime(new ApprovalGate(keyspace.channel, (key) => keyspace.receipts.registerRun(key)), toolList, options);
  const runtime: CallRuntime = {
    keyspace,
    tools,
    // Each call's facts go to the log, the events and the telemetry, subscribed here once.
    facts: new CallFactsSource(logger, events, options.telemetry ?? NOOP_OBSERVER),
    digest: options.digest ?? sha256Digest,
    waitJitterMs: options.waitJitterMs ?? 250,
    maxWaitMs: options.maxWaitMs ?? 2000,
    onAmbiguous: options.onAmbiguous ?? 'fail',
    approvals,
    // A tool that needs approval keeps its answer on a receipt, even a read-only one.
    runsWithoutReceipt: (tool) => tool.readOnly && !repairOptions.isDestructive(tool) && !approvals?.of(tool),
    prepare: inputPreparer(repairOptions, toolList),
    shape: resultShaperOf(options),
    limits,
    claimOptions: claimOptionsOf(toolList),
  };

  // Awaited by every job only when some tool is transactional.
  const check = startUpCheck(toolList, logger);
  // The Redis check, once it has passed: a job meets an unreachable Redis by itself, at its claim.
  let redisChecked: Promise<void> | undefined;
  const ready = async (): Promise<void> => {
    await (redisChecked ??= keyspace.checkRedis().catch((error: unknown) => {
      redisChecked = undefined;
      throw error;
    }));
    if (check) await check();
  };

  const processor = async (job: Job, token: string | undefined, signal?: AbortSignal): Promise<ToolJobResult> => {
    if (check) await check();
    let data;
    try {
      data = parseToolJobData(job.data);
    } catch (error) {
      if (error instanceof InvalidJobDataError) throw unrecoverable(error);
      throw error;
    }
    // Aborted by BullMQ's signal or a lost lock; no AbortController unless a call asks for the signal.
    const abort = new LazyAbort(signal);
    const jobKey = job.id ?? '';
    lockLost.set(jobKey, abort);
    const attemptJob = attemptJobOf(job);
    const park = async (serverNowMs: number, delayMs: number, comeBack?: () => Promise<boolean>) => {
      // A job cancelled (or whose lock was lost) is never parked to come back, wherever its park was asked.
      throwIfInterrupted(jobKey, abort);
      await parkJobOnServerClock(job, token, serverNowMs, delayMs);
      if (comeBack !== undefined && attemptJob !== undefined && (await comeBack().catch(() => false))) comeBackSoon(job, attemptJob);
    };
    const results: ToolResultBlock[] = [];
    try {
      await runTurn(runtime, { job, token, data, abort, park, answered: results, attemptJob }, results);
      // Cancelled while its last call ran: the job still ends cancelled (see interruptedEnding).
      const interrupted = interruptedEnding(jobKey, abort, {});
      if (interrupted) throw interrupted;
      return { results };
    } catch (error) {
      const ending = interruptedEnding(jobKey, abort, { error }) ?? endingOf(error, logger, job.id);
      await keepPartialResults(job, results, ending, logger);
      throw ending;
    } finally {
      lockLost.delete(jobKey);
      abort.dispose();
    }
  };

  const attach = (worker: LockRenewalEvents): (() => void) => {
    const onLockRenewalFailed = (jobIds: string[]) => {
      for (const id of jobIds) lockLost.get(id)?.abort(new JobLockLostError(id));
    };
    worker.on('lockRenewalFailed', onLockRenewalFailed);
    return () => void worker.off('lockRenewalFailed', onLockRenewalFailed);
  };

  return Object.assign(processor, { events, keyspace, store, breaker: keyspace.breaker, limits, attach, ready });
}

/** The BullMQ job a claim records for the attempt it may start: its queue, BullMQ prefix and id. */
export function attemptJobOf(job: Job): AttemptJob | undefined {
  if (job.id === undefined) return undefined;
  const qualified = job.queueQualifiedName;
  const prefix = qualified.endsWith(`:${job.queueName}`) ? qualified.slice(0, -(job.queueName.length + 1)) : 'bull';
  return { queue: job.queueName, prefix, id: job.id };
}

/**
 * How each tool's calls are claimed, worked out once: the effect a claim
 * records, and whether the tool settles its own expired attempts. A call's
 * options add its job, and whether its approval gate asked a person; the
 * lease and the owner are the keyspace's.
 */
function claimOptionsOf(tools: readonly AnyToolDefinition[]): CallRuntime['claimOptions'] {
  const byTool = new Map(tools.map((tool) => [tool, { effect: recordedEffectOf(tool), settles: settlesExpired(tool) }]));
  return (tool, scope, needsApproval = false): ClaimOptions => {
    const { effect, settles } = byTool.get(tool) ?? { effect: recordedEffectOf(tool), settles: settlesExpired(tool) };
    // One literal, no spreads: it is built for every claimed call.
    return { effect, job: scope.attemptJob, settlesExpired: settles, needsApproval, onSent: undefined };
  };
}

/**
 * The worker's limits, on the keyspace's channel (their options were checked
 * with the wrapper's), or `undefined` when neither it nor a tool has any.
 */
function workerLimitsOf(
  keyspace: ReceiptsKeyspace,
  options: ToolReceiptsOptions,
  tools: readonly AnyToolDefinition[],
): WorkerLimits | undefined {
  if (options.limits === undefined && tools.every((tool) => tool.limits === undefined)) return undefined;
  const store = new LimitStore({ channel: keyspace.channel, reservationMs: options.limitReservationMs });
  return new WorkerLimits(store, options.limits, tools);
}
