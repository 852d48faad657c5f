/**
 * The options of `withToolReceipts` and their schemas (and the reconcile
 * sweep's): every option checked where it is given, so one that cannot work
 * (a `maxWaitMs` of NaN, a `destructiveTools` string) is refused before any job runs.
 */
import {
  functionOption,
  iterableOption,
  MAX_TIMER_MS,
  nonBlankString,
  oneOf,
  refuseOption,
  required,
  shaped,
  stringList,
  wholeNumber,
  type OptionRule,
  type OptionsSchema,
} from '../core/options.js';
import { connectionOption, KEYSPACE_OPTION_RULES } from '../redis/options.js';
import { limitsOption } from '../limits/definitions.js';
import type { ResultShapingOptions } from './tools/result-shaping.js';
import { APPROVAL_OPTIONS_SCHEMA } from '../approvals/options.js';
import type { Logger } from 'pino';
import type { RedisConnection } from '../redis/connection/connection.js';
import type { DigestFn, sha256Digest } from '../core/identity.js';
import type { DurabilityOptions } from '../redis/durability/durability.js';
import type { ReceiptLayout } from '../redis/settings.js';
import type { Reshaper } from '../repair/reshaper.js';
import type { AnyLimitDefinition } from '../limits/definitions.js';
import type { ApprovalOptions } from '../approvals/types.js';
import type { AnyToolDefinition } from './tools/define-tool.js';
import type { ToolReceiptsEvents } from './events.js';
import type { ToolCallObserver } from './call/facts.js';

const logger = shaped('a pino logger (it needs child, info, warn and isLevelEnabled), or left out for the default', [
  'child',
  'info',
  'warn',
  'isLevelEnabled',
]);
const digest = functionOption('a function such as hmacSha256Digest(secret), or left out for SHA-256');
const TOOLS_WANTED = 'an array of tools made with defineTool';
const iterableTools = iterableOption(TOOLS_WANTED);
/**
 * `tools`: an iterable of tools. An array is also checked item by item and
 * must not be empty (a worker without tools runs nothing); another iterable
 * may be one-shot, so it is read once, by the entry point, not here.
 */
const tools: OptionRule = required({
  check(value, site) {
    iterableTools.check(value, site);
    if (!Array.isArray(value)) return;
    if (value.length === 0) throw refuseOption(site, `${TOOLS_WANTED}, at least one (without tools nothing can run)`, value);
    value.forEach((tool: unknown, i) => {
      const named = typeof tool === 'object' && tool !== null && typeof (tool as { name?: unknown }).name === 'string';
      if (!named || typeof (tool as { execute?: unknown }).execute !== 'function') {
        throw refuseOption({ owner: site.owner, option: `tools[${i}]` }, 'a tool made with defineTool', tool, true);
      }
    });
  },
});

/** Where large results go: shared by the wrapper and the sweep, so both shape a result alike. */
const RESULT_SHAPING_SCHEMA: OptionsSchema<ResultShapingOptions> = {
  resultStore: shaped('a tool-result store (with put, get and ownerOf), e.g. new RedisToolResultStore({ redis })', [
    'put',
    'get',
    'ownerOf',
  ]),
  offloadThresholdChars: wholeNumber(1, 'characters'),
  maxResultChars: wholeNumber(1, 'characters'),
};

/**
 * The rule of each `withToolReceipts` option. Typed by its keys rather than
 * by the options interface (which imports nothing from here); the processor
 * checks with it as `OptionsSchema<ToolReceiptsOptions>`, so an option the
 * interface has and this lacks does not compile, and a test holds the key
 * sets equal.
 */
export const TOOL_RECEIPTS_SCHEMA = {
  redis: connectionOption,
  tools,
  ...KEYSPACE_OPTION_RULES,
  logger,
  digest,
  onAmbiguous: oneOf('fail', 'report'),
  waitJitterMs: wholeNumber(0, 'ms', MAX_TIMER_MS),
  // A waiting job claims again after at most this long: below 10 ms it is a hot loop on Redis.
  maxWaitMs: wholeNumber(10, 'ms', MAX_TIMER_MS),
  events: shaped('a ToolReceiptsEvents (an EventEmitter), or left out for a new one', ['on', 'emit']),
  destructiveTools: stringList,
  reshaper: shaped('a reshaper: an object with reshape(request)', ['reshape']),
  maxRepairAttempts: wholeNumber(0),
  backendModel: nonBlankString,
  telemetry: shaped('a call observer such as toolReceiptsOtel(), with callStarted(call)', ['callStarted']),
  limits: limitsOption,
  limitReservationMs: wholeNumber(1, 'ms', MAX_TIMER_MS),
  ...RESULT_SHAPING_SCHEMA,
  ...APPROVAL_OPTIONS_SCHEMA,
} as const;

/**
 * The rule of each option of the reconcile sweep. The workers' options it
 * does not use are accepted (and checked alike), so the workers' options
 * object can be passed to the sweep as is.
 */
export const RECONCILE_SWEEP_SCHEMA = TOOL_RECEIPTS_SCHEMA;

/**
 * Options of {@link withToolReceipts}. With `resultStore` set, results over
 * `offloadThresholdChars` are stored there and the model gets a preview, and
 * the page-back tool `ReadToolResult` is registered automatically. An option
 * given as `undefined` counts as left out (so `prefix: process.env.PREFIX`
 * compiles under `exactOptionalPropertyTypes`).
 */
export interface ToolReceiptsOptions extends ResultShapingOptions, ApprovalOptions {
  /**
   * The connection receipts are written through (not BullMQ's blocking one):
   * an ioredis `Redis`, or a `Cluster`.
   */
  readonly redis: RedisConnection;
  readonly tools: Iterable<AnyToolDefinition>;
  /** Key prefix of receipts and breaker counters; default `trc`. */
  readonly prefix?: string | undefined;
  /** Receipt lease; heartbeats extend it every third. Default 30 s. */
  readonly leaseMs?: number | undefined;
  /** How long settled receipts are kept. Default 24 h. */
  readonly retentionMs?: number | undefined;
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
  readonly durability?: DurabilityOptions | undefined;
  /**
   * Group commit (default `true`): the claims and completes of this worker's
   * jobs that meet in one tick go to Redis as one script call, each decided
   * exactly as alone, in order. A call sent while none is in flight goes out
   * at once, so a worker running one job at a time pays nothing. `false`
   * sends each on its own. See docs/performance.md.
   */
  readonly groupCommit?: boolean | undefined;
  /**
   * The layout the receipts this worker creates are written in: `2` (the
   * default) or `4`, the same receipt without the fields `tenant`, `run`,
   * `tool` and `args_hash`, which its key already names. A receipt that
   * exists keeps its own layout. Turn it on only once every worker, CLI and
   * console on the prefix runs this release or a later one: the previous
   * release decides on a layout-4 receipt correctly but reads it without its
   * names, so its CLI cannot show or resolve it (see docs/upgrading.md).
   * Anything but `2` or `4` is refused (`options.invalid`).
   */
  readonly receiptLayout?: ReceiptLayout | undefined;
  readonly logger?: Logger | undefined;
  /**
   * Digest of the canonical arguments. Default {@link sha256Digest}; a
   * multi-tenant deployment should pass `hmacSha256Digest(secret)`.
   */
  readonly digest?: DigestFn | undefined;
  /** `fail` (default): the job fails unrecoverably. `report`: the model gets an error result saying the outcome is unknown. */
  readonly onAmbiguous?: 'fail' | 'report' | undefined;
  /** Random extra delay, up to this many ms, when a job waits for a live attempt. Default 250. */
  readonly waitJitterMs?: number | undefined;
  /**
   * Longest delay before a waiting job looks again, even when the live
   * attempt's lease has longer to run. Default 2 s.
   */
  readonly maxWaitMs?: number | undefined;
  /** Names this worker on the receipts it claims. Default host:pid:random. */
  readonly owner?: string | undefined;
  /**
   * The longest each receipts command (claim, complete, heartbeat, breaker,
   * reconcile) may go without a reply, whatever the client. Default 5 s; see
   * `ReceiptStoreOptions.commandTimeoutMs`.
   */
  readonly commandTimeoutMs?: number | undefined;
  readonly events?: ToolReceiptsEvents | undefined;
  /**
   * Tool names (exact, case-insensitive; a trailing `*` matches a prefix)
   * treated as destructive whatever the tools or their annotations say.
   */
  readonly destructiveTools?: readonly string[] | undefined;
  /** Proposes corrected arguments for invalid, non-destructive calls. */
  readonly reshaper?: Reshaper | undefined;
  /** Reshaper answers to try per call. Default 2. */
  readonly maxRepairAttempts?: number | undefined;
  /** The model that wrote the calls, passed to the reshaper. */
  readonly backendModel?: string | undefined;
  /**
   * Told every call's milestones: pass `toolReceiptsOtel()` from
   * `bullmq-tool-receipts/otel` for OpenTelemetry spans and metrics. Default: nothing observed.
   */
  readonly telemetry?: ToolCallObserver | undefined;
  /**
   * Limits the whole fleet keeps, counted at the execution: each covers the
   * tools it names (or all), per tenant, per run or globally (see
   * `defineLimit` in `bullmq-tool-receipts/limits`, and docs/limits.md). A
   * tool's own limits go on `defineTool({ limits })`. Checked here, once:
   * `options.invalid` names the field of one that cannot work.
   */
  readonly limits?: readonly AnyLimitDefinition[] | undefined;
  /**
   * How long a limit's reservation waits for its claim before it may be
   * given back (a worker died between the two). Default 30 s; see
   * `LimitStoreOptions.reservationMs`.
   */
  readonly limitReservationMs?: number | undefined;
}
