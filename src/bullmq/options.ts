/**
 * The option schemas of `withToolReceipts` and of the reconcile sweep: every
 * option checked where it is given, so one that cannot work (a `maxWaitMs`
 * of NaN, a `destructiveTools` string) is refused before any job runs.
 */
import {
  booleanOption,
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
import { durabilityOption } from '../redis/durability/durability.js';
import { commandTimeoutOption, connectionOption, leaseOption, ownerOption, prefixOption, retentionOption } from '../redis/options.js';
import { limitsOption } from '../limits/definitions.js';
import type { ResultShapingOptions } from './result-shaping.js';
import { APPROVAL_OPTIONS_SCHEMA } from '../approvals/options.js';

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
  prefix: prefixOption,
  leaseMs: leaseOption,
  retentionMs: retentionOption,
  commandTimeoutMs: commandTimeoutOption,
  durability: durabilityOption,
  groupCommit: booleanOption,
  logger,
  digest,
  onAmbiguous: oneOf('fail', 'report'),
  waitJitterMs: wholeNumber(0, 'ms', MAX_TIMER_MS),
  // A waiting job claims again after at most this long: below 10 ms it is a hot loop on Redis.
  maxWaitMs: wholeNumber(10, 'ms', MAX_TIMER_MS),
  owner: ownerOption,
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
