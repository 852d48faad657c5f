/**
 * `withToolReceipts`: checks its options once, makes the receipts keyspace,
 * and returns the BullMQ processor that runs each job's calls.
 */
import type { Job } from 'bullmq';
import type { RedisConnection } from '../redis/connection/connection.js';
import { checkOptions } from '../core/options.js';
import { TOOL_RECEIPTS_SCHEMA } from './options.js';
import { pino, type Logger } from 'pino';
import { sha256Digest, type DigestFn } from '../core/identity.js';
import type { BreakerStore } from '../redis/receipts/transitions/breaker-store.js';
import type { ReceiptStore } from '../redis/receipts/store.js';
import type { DurabilityOptions } from '../redis/durability/durability.js';
import { ReceiptsKeyspace } from '../redis/receipts/keyspace.js';
import type { AnyToolDefinition } from './define-tool.js';
import { LazyAbort } from './abort.js';
import { JobLockLostError, unrecoverable } from './errors.js';
import { ToolReceiptsEvents } from './events.js';
import { NOOP_OBSERVER, type ToolCallObserver } from './observer.js';
import { InvalidJobDataError, parseToolJobData, type ToolJobResult, type ToolResultBlock } from './job-data.js';
import { keepPartialResults } from './ambiguity.js';
import { parkJobOnServerClock } from './park-job.js';
import type { CallRuntime } from './call-runtime.js';
import { runTurn } from './turn.js';
import { interruptedEnding } from './interruption.js';
import { endingOf } from './infrastructure.js';
import { checkTransactionalTools } from './transactional-call.js';
import { readToolResultTool, resultShaper, type ResultShapingOptions } from './result-shaping.js';
import { prepareCall, type InputRepairOptions } from './prepare-call.js';
import { destructiveMatcher } from '../repair/destructive.js';
import type { Reshaper } from '../repair/reshaper.js';
import { assertUniqueToolNames } from '../repair/tool-names.js';
import type { LimitDefinition } from '../limits/definitions.js';
import { LimitStore } from '../limits/limit-store.js';
import { WorkerLimits } from '../limits/call-limits.js';
import { ApprovalGate } from '../approvals/gate.js';
import type { ApprovalOptions } from '../approvals/types.js';
import { approvalRuntime } from './approval-step.js';

/**
 * Options of {@link withToolReceipts}. With `resultStore` set, results over
 * `offloadThresholdChars` are stored there and the model gets a preview, and
 * the page-back tool `ReadToolResult` is registered automatically.
 */
export interface ToolReceiptsOptions extends ResultShapingOptions, ApprovalOptions {
  /**
   * The connection receipts are written through (not BullMQ's blocking one):
   * an ioredis `Redis`, or a `Cluster`.
   */
  readonly redis: RedisConnection;
  readonly tools: Iterable<AnyToolDefinition>;
  /** Key prefix of receipts and breaker counters; default `trc`. */
  readonly prefix?: string;
  /** Receipt lease; heartbeats extend it every third. Default 30 s. */
  readonly leaseMs?: number;
  /** How long settled receipts are kept. Default 24 h. */
  readonly retentionMs?: number;
  /**
   * Wait for Redis replicas (`WAIT`) or AOF fsyncs (`aof`, `WAITAOF`) to
   * acknowledge a call's claim before its effect starts, and its settle
   * before the job returns. A claim not acknowledged within `timeoutMs` is
   * settled as never started and the job retries without running the tool.
   * An unacknowledged write is infrastructure (`durability.not_acknowledged`:
   * the job retries; the breaker and the model never hear of it); durability
   * the server cannot give (`durability.unsupported`) fails each job
   * unrecoverably. Off by default: see docs/redis.md for what each mode
   * survives.
   */
  readonly durability?: DurabilityOptions;
  /**
   * Group commit (default `true`): the claims and completes of this worker's
   * jobs that meet in one tick go to Redis as one script call, each decided
   * exactly as alone, in order. A call sent while none is in flight goes out
   * at once, so a worker running one job at a time pays nothing. `false`
   * sends each on its own. See docs/performance.md.
   */
  readonly groupCommit?: boolean;
  readonly logger?: Logger;
  /**
   * Digest of the canonical arguments. Default {@link sha256Digest}; a
   * multi-tenant deployment should pass `hmacSha256Digest(secret)`.
   */
  readonly digest?: DigestFn;
  /** `fail` (default): the job fails unrecoverably. `report`: the model gets an error result saying the outcome is unknown. */
  readonly onAmbiguous?: 'fail' | 'report';
  /** Random extra delay, up to this many ms, when a job waits for a live attempt. Default 250. */
  readonly waitJitterMs?: number;
  /**
   * Longest delay before a waiting job looks again, even when the live
   * attempt's lease has longer to run. Default 2 s.
   */
  readonly maxWaitMs?: number;
  /** Names this worker on the receipts it claims. Default host:pid:random. */
  readonly owner?: string;
  /**
   * The longest each receipts command (claim, complete, heartbeat, breaker,
   * reconcile) may go without a reply, whatever the client. Default 5 s; see
   * `ReceiptStoreOptions.commandTimeoutMs`.
   */
  readonly commandTimeoutMs?: number;
  readonly events?: ToolReceiptsEvents;
  /**
   * Tool names (exact, case-insensitive; a trailing `*` matches a prefix)
   * treated as destructive whatever the tools or their annotations say.
   */
  readonly destructiveTools?: readonly string[];
  /** Proposes corrected arguments for invalid, non-destructive calls. */
  readonly reshaper?: Reshaper;
  /** Reshaper answers to try per call. Default 2. */
  readonly maxRepairAttempts?: number;
  /** The model that wrote the calls, passed to the reshaper. */
  readonly backendModel?: string;
  /**
   * Told every call's milestones: pass `toolReceiptsOtel()` from
   * `bullmq-tool-receipts/otel` for OpenTelemetry spans and metrics. Default: nothing observed.
   */
  readonly telemetry?: ToolCallObserver;
  /**
   * Limits the whole fleet keeps, counted at the execution: each covers the
   * tools it names (or all), per tenant, per run or globally (see
   * `defineLimit` in `bullmq-tool-receipts/limits`, and docs/limits.md). A
   * tool's own limits go on `defineTool({ limits })`. Checked here, once:
   * `options.invalid` names the field of one that cannot work.
   */
  readonly limits?: readonly LimitDefinition[];
  /**
   * How long a limit's reservation waits for its claim before it may be
   * given back (a worker died between the two). Default 30 s; see
   * `LimitStoreOptions.reservationMs`.
   */
  readonly limitReservationMs?: number;
}

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
   * Resolves once every transactional tool's database has its outcome table
   * (checked, writing nothing, as soon as the processor is made); rejects
   * with `transactional.table_missing`, whose message prints the
   * `tool-receipts migrate` command, or `transactional.table_mismatch`.
   * Await it before starting the Worker. Resolves at once without
   * transactional tools. A check that failed is made again on the next call
   * (and by the next job, which fails with the same error meanwhile).
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
    logger,
    events,
    digest: options.digest ?? sha256Digest,
    waitJitterMs: options.waitJitterMs ?? 250,
    maxWaitMs: options.maxWaitMs ?? 2000,
    onAmbiguous: options.onAmbiguous ?? 'fail',
    observer: options.telemetry ?? NOOP_OBSERVER,
    approvals,
    // A tool that needs approval keeps its answer on a receipt, even a read-only one.
    runsWithoutReceipt: (tool) => tool.readOnly && !repairOptions.isDestructive(tool) && !approvals?.of(tool),
    prepare: (call, tool, abort) => prepareCall(call, tool, repairOptions, abort),
    shape: resultShaper(options),
    limits,
  };

  const ready = startUpCheck(toolList, logger);

  const processor = async (job: Job, token: string | undefined, signal?: AbortSignal): Promise<ToolJobResult> => {
    await ready();
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
      await runTurn(runtime, { job, token, data, abort, park }, results);
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

/**
 * The outcome tables of the transactional tools, checked once the processor
 * is made (so a missing table is an error line at start-up, not at the first
 * call); a failed check is logged and tried again on the next `ready()`.
 */
function startUpCheck(tools: readonly AnyToolDefinition[], logger: Logger): () => Promise<void> {
  if (!tools.some((tool) => tool.effect === 'transactional')) return () => Promise.resolve();
  let checked: Promise<void> | undefined;
  const ready = () =>
    (checked ??= checkTransactionalTools(tools).catch((error: unknown) => {
      checked = undefined;
      throw error;
    }));
  ready().catch((error: unknown) => {
    logger.error({ code: (error as { code?: string }).code, err: error }, `transactional tools cannot run: ${(error as Error).message}`);
  });
  return ready;
}
