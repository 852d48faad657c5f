/**
 * `withToolReceipts`: checks its options once, makes the receipts keyspace,
 * and returns the BullMQ processor: each job's data checked, then its turn
 * (its calls in order, or side by side where allowed) run.
 */
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import { checkOptions } from '../core/options.js';
import { TOOL_RECEIPTS_SCHEMA, type ToolReceiptsOptions } from './options.js';
import { pino } from 'pino';
import { sha256Digest } from '../core/identity.js';
import type { BreakerStore } from '../redis/receipts/transitions/breaker-store.js';
import type { ReceiptStore } from '../redis/receipts/store.js';
import { ReceiptsKeyspace } from '../redis/receipts/keyspace.js';
import type { AnyToolDefinition } from './define-tool.js';
import { JobLockLostError, unrecoverable } from './errors.js';
import { ToolReceiptsEvents } from './events.js';
import { CallFactsSource, NOOP_OBSERVER } from './observer.js';
import {
  InvalidJobDataError,
  parseToolJobData,
  type ToolCall,
  type ToolJobData,
  type ToolJobResult,
  type ToolResultBlock,
} from '../core/job-data.js';
import { keepPartialResults } from './ambiguity.js';
import { parkJobOnServerClock } from './park-job.js';
import type { CallRuntime, JobScope } from './call-runtime.js';
import { endingOf } from './infrastructure.js';
import { startUpCheck } from './transactional-call.js';
import { readToolResultTool } from './result-shaping.js';
import { ClaimGroup, inputPreparer, NextCall, type InputRepairOptions } from './prepare-call.js';
import { LazyAbort, runToolCall } from './run-call.js';
import { interruptionOf, resultShaperOf, throwIfInterrupted } from './settle-call.js';
import { errorText } from './failure-policy.js';
import { destructiveMatcher } from '../repair/destructive.js';
import { assertUniqueToolNames } from '../repair/tool-names.js';
import { LimitStore } from '../limits/limit-store.js';
import { WorkerLimits } from '../limits/call-limits.js';
import { ApprovalGate } from '../approvals/gate.js';
import { approvalRuntime } from './approval-step.js';

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
  if (options.resultStore) toolList.push(readToolResultTool(options.resultStore));
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
  const approvals = approvalRuntime(new ApprovalGate(keyspace.channel), toolList, options);
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
    const park = (serverNowMs: number, delayMs: number) => parkJobOnServerClock(job, token, serverNowMs, delayMs);
    const results: ToolResultBlock[] = [];
    try {
      await runTurn(runtime, { job, token, data, abort, park, answered: results }, results);
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

/** Whether a call may run side by side with its neighbours: the job says so, or its tool does. */
const runsSideBySide = (rt: CallRuntime, data: ToolJobData, call: ToolCall): boolean =>
  data.parallel === true || rt.tools.get(call.name)?.parallel === true;

/**
 * Run a job's calls in order, appending each block to `results` as it ends.
 * Consecutive calls that may run side by side run as one concurrent group;
 * any other call runs alone. A call that runs alone may have its claim
 * carried by the complete of the call before it, when that one ran alone
 * too (see `NextCall`). A job whose lock was lost or that was cancelled
 * starts nothing more (see `throwIfInterrupted`), and an attempt claimed
 * ahead for a call it will not run is released. What a call throws ends the
 * turn; `results` then holds the blocks of the calls that ended, in call
 * order, for the caller to keep.
 */
export async function runTurn(rt: CallRuntime, scope: JobScope, results: ToolResultBlock[]): Promise<void> {
  const { calls } = scope.data;
  const groupEnd = (start: number): number => {
    let end = start + 1;
    if (runsSideBySide(rt, scope.data, calls[start]!)) {
      while (end < calls.length && runsSideBySide(rt, scope.data, calls[end]!)) end++;
    }
    return end;
  };
  // The call about to run, as the call before it staged (and maybe claimed) it.
  let self: NextCall | undefined;
  let next: NextCall | undefined;
  for (let start = 0; start < calls.length;) {
    const end = groupEnd(start);
    try {
      throwIfInterrupted(scope.job.id ?? '', scope.abort);
      if (end - start === 1) {
        next = end < calls.length && groupEnd(end) === end + 1 ? new NextCall(rt, scope, calls[end]!) : undefined;
        results.push(await runToolCall(rt, scope, calls[start]!, { self, next }));
      } else {
        await runSideBySide(rt, scope, calls.slice(start, end), results);
      }
    } catch (error) {
      for (const unrun of [self, next]) await unrun?.release(`the job stopped before call ${unrun.call.id} started: ${errorText(error)}`);
      throw error;
    }
    self = next;
    next = undefined;
    start = end;
  }
}

/**
 * Run `calls` concurrently, each with its own receipt, lease and fence, and
 * append the blocks of those that ended to `results` in call order. Every
 * call runs to its end before anything is thrown, so a wait or an ambiguity
 * of one never cuts the others off (their receipts settle, and a later
 * delivery replays them). Then: the first error that stops the job
 * (UnrecoverableError), else the first other error, is thrown; else, when a
 * call waits, the job is parked once, until the earliest wait is due.
 *
 * Parking is deferred because a parked job's BullMQ lock is no longer
 * renewed: the calls still running would be aborted as if the lock were lost.
 */
async function runSideBySide(rt: CallRuntime, scope: JobScope, calls: ToolCall[], results: ToolResultBlock[]): Promise<void> {
  let due: { serverNowMs: number; delayMs: number } | undefined;
  const deferred: JobScope = {
    ...scope,
    park: async (serverNowMs, delayMs) => {
      if (due === undefined || serverNowMs + delayMs < due.serverNowMs + due.delayMs) due = { serverNowMs, delayMs };
    },
  };
  // Claimed together, in one round trip, when two or more of them would claim now.
  const members = calls.map((call) => new NextCall(rt, scope, call));
  await ClaimGroup.form(rt, members);
  const ended = await Promise.allSettled(calls.map((call, i) => runToolCall(rt, deferred, call, { self: members[i] })));
  // A call that stopped before taking its claim (the job was interrupted) never started its effect.
  for (const member of members) await member.release(`the job stopped before call ${member.call.id} started`);
  let failure: { error: unknown } | undefined;
  let wait: DelayedError | undefined;
  for (const outcome of ended) {
    if (outcome.status === 'fulfilled') results.push(outcome.value);
    else if (outcome.reason instanceof DelayedError) wait ??= outcome.reason;
    else if (failure === undefined || (outcome.reason instanceof UnrecoverableError && !(failure.error instanceof UnrecoverableError))) {
      failure = { error: outcome.reason };
    }
  }
  if (failure !== undefined) throw failure.error;
  if (wait !== undefined && due !== undefined) {
    await scope.park(due.serverNowMs, due.delayMs);
    throw wait;
  }
}

/**
 * How an interrupted job ends, whatever its turn came to (`outcome`: the
 * error it threw, or none when it finished). The interruption replaces any
 * error that would have retried the job (such as the failure of a tool that
 * stopped because of the abort), so a cancelled job never runs again
 * whatever `attempts` says; a cancelled job whose last call finished anyway
 * ends cancelled too. An error that already stops the job
 * (`UnrecoverableError`: an ambiguous call, a destructive failure) says more
 * and is kept, and so is a `DelayedError`, thrown once the job was already
 * parked; a job that lost its lock but finished every call returns its
 * results (every receipt is settled; if the lock is really gone, BullMQ
 * refuses the completion and a redelivery replays them). Returns
 * `undefined` when the job was not interrupted, or `outcome` stands.
 */
export function interruptedEnding(
  jobId: string,
  signal: Pick<AbortSignal, 'aborted' | 'reason'>,
  outcome: { readonly error?: unknown },
): Error | undefined {
  const interruption = interruptionOf(jobId, signal);
  if (interruption === undefined || outcome.error === interruption) return undefined;
  if (!('error' in outcome) && interruption instanceof JobLockLostError) return undefined;
  if (outcome.error instanceof UnrecoverableError || outcome.error instanceof DelayedError) return undefined;
  return interruption;
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
