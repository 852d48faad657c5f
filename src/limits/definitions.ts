/**
 * Limits as a team declares them, next to its tools: how many calls (or how
 * much of a cost) a tenant, a run or the whole fleet may spend per window
 * (fixed, sliding, or a token bucket), or how many may be in flight at once
 * (an in-flight cap, `./caps.ts`), and what a call that does not fit does.
 * Pure: checking the definitions, picking the limits of a tool, and a
 * call's cost.
 */
import { ToolReceiptsError } from '../core/errors.js';
import {
  checkOptions,
  functionOption,
  InvalidOptionsError,
  oneOf,
  refuseOption,
  required,
  rule,
  shownValue,
  stringList,
  wholeNumber,
  type OptionRule,
  type OptionsSchema,
  type OptionSite,
} from '../core/options.js';
import type { InFlightCap, InFlightCapDefinition } from './caps.js';
import { capOf, windowOf, type LimitKind, type LimitScope, type OnLimit } from './kinds.js';

export { MAX_BUCKET_SPAN, type LimitKind, type LimitScope, type OnLimit } from './kinds.js';

/** A limit or an in-flight cap, as given in `limits: [...]`. */
export type AnyLimitDefinition<Args = unknown> = LimitDefinition<Args> | InFlightCapDefinition;
/** A checked limit or in-flight cap (`isCap` tells them apart). */
export type AnyLimit = Limit | InFlightCap;

/** The longest window a limit may have: 366 days (its keys are kept about two windows). */
export const MAX_LIMIT_WINDOW_MS = 366 * 86_400_000;

/**
 * What one call costs of a limit, from its arguments. Checked as a method
 * is (either way round), so a cost typed for one tool's arguments still
 * fits a list of limits of unknown arguments, while a cost for other
 * arguments than a tool's is refused on that tool.
 */
export type LimitCost<Args> = { cost(args: Args): number }['cost'];

/**
 * One limit, as given in `limits: [...]`: at most `max` per `per` every
 * `windowMs`, counted in calls, or in `cost` units when a cost is given.
 *
 * ```ts
 * const emails = { name: 'emails', per: 'tenant', max: 100, windowMs: 3_600_000, tools: ['send_email'] };
 * const spend = { name: 'spend', per: 'tenant', max: 5_000, windowMs: 86_400_000, cost: (args: { tokens: number }) => args.tokens };
 * ```
 */
export interface LimitDefinition<Args = unknown> {
  /**
   * Its name: it keys the count, so it must be unique among a worker's
   * limits, and it is what the model and operators read. Letters, digits,
   * `_`, `.` and `-`, starting with a letter or digit, at most 64.
   */
  name: string;
  /** Whose calls share one count. */
  per: LimitScope;
  /** The most a window holds: calls, or cost units with `cost`. A whole number, at least 1. */
  max: number;
  /**
   * The window's length in ms, from 1 to {@link MAX_LIMIT_WINDOW_MS}. Windows
   * are fixed on the Redis server's clock, at multiples of their length
   * since 1970-01-01T00:00Z: an hour's resets on the hour, a day's at
   * midnight UTC, a week's on Thursday at midnight UTC.
   */
  windowMs: number;
  /**
   * What one call costs, from its arguments, in the team's own unit (cents,
   * tokens): a whole number, 0 or more (a call costing 0 is not limited).
   * Left out (or `undefined`), every call costs 1, and `max` counts calls.
   */
  cost?: LimitCost<Args> | undefined;
  /** The tools it covers, by name; left out (or `undefined`), every tool. */
  tools?: readonly string[] | undefined;
  /** What a call that does not fit does. Default `'refuse'`. */
  onLimit?: OnLimit | undefined;
  /** How the window moves; default `'fixed'` (see {@link LimitKind}). */
  kind?: LimitKind | undefined;
  /**
   * For `kind: 'bucket'` only: how much may be spent at once from a full
   * bucket, a whole number from 1; default `max`. `burst × windowMs` is at
   * most 2^52 (`MAX_BUCKET_SPAN`).
   */
  burst?: number | undefined;
  /**
   * Not on a window: a definition with `concurrency` is an in-flight cap
   * ({@link InFlightCapDefinition}), and one that gives it with a window
   * (`max`, `windowMs`, `kind` or `burst`) is refused naming it.
   */
  concurrency?: undefined;
}

/**
 * A checked {@link LimitDefinition}, with its defaults filled in. It is a
 * definition too: `defineLimit`'s result goes into `limits: [...]` as it is,
 * and `Args` (what its cost reads) must fit the arguments of the tools it is given to.
 */
export interface Limit<Args = unknown> extends LimitDefinition<Args> {
  readonly name: string;
  readonly per: LimitScope;
  readonly max: number;
  readonly windowMs: number;
  /** The cost function as given; `undefined` when every call costs 1. */
  readonly cost: LimitCost<Args> | undefined;
  /** `undefined` for every tool. */
  readonly tools: readonly string[] | undefined;
  readonly onLimit: OnLimit;
  readonly kind: LimitKind;
  /** A bucket's burst (`max` when not given); `undefined` for the other kinds. */
  readonly burst: number | undefined;
  /** Always `undefined`: a window (an in-flight cap is an `InFlightCap`). */
  readonly concurrency: undefined;
}

/** What a limit's name may be: letters, digits, `_ . -`, starting with a letter or digit, at most 64. */
export const LIMIT_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

const nameRule = required(
  rule(
    'a limit name of letters, digits, _ . and - (starting with a letter or digit, at most 64)',
    (v) => typeof v === 'string' && LIMIT_NAME.test(v),
  ),
);
const toolsRule: OptionRule = {
  check(value, site) {
    stringList.check(value, site);
    if ((value as unknown[]).length === 0) throw refuseOption(site, 'a non-empty array of tool names (leave it out for every tool)', value);
  },
};

/** The rule of each field of a limit or an in-flight cap. */
export const LIMIT_DEFINITION_SCHEMA: OptionsSchema<Omit<LimitDefinition, 'concurrency'> & { concurrency?: number }> = {
  name: nameRule,
  per: required(oneOf('tenant', 'run', 'global')),
  // Required unless `concurrency` is given: checked with the fields together (see windowOf).
  max: wholeNumber(1),
  windowMs: wholeNumber(1, 'ms', MAX_LIMIT_WINDOW_MS),
  cost: functionOption("a function from the call's arguments to a whole number, or left out to count calls"),
  tools: toolsRule,
  onLimit: oneOf('refuse', 'wait'),
  kind: oneOf('fixed', 'sliding', 'bucket'),
  burst: wholeNumber(1),
  concurrency: wholeNumber(1),
};

/**
 * The limits this process made by checking a definition: frozen, so one is
 * never checked again wherever it is handed on (a `defineLimit` given to a
 * tool, then to the processor).
 */
const CHECKED = new WeakSet<AnyLimit>();
/** The checked list of each `limits` array an entry point was given, so its schema's check and its use parse it once. */
const CHECKED_LISTS = new WeakMap<readonly unknown[], { readonly given: readonly unknown[]; readonly limits: AnyLimit[] }>();

function checked(owner: string, definition: unknown, at: string): AnyLimit {
  if (CHECKED.has(definition as AnyLimit)) return definition as AnyLimit;
  const d = checkOptions<Omit<LimitDefinition, 'concurrency'> & { concurrency?: number }>(owner, definition, LIMIT_DEFINITION_SCHEMA, at);
  // Each field is read once here (a getter may count its reads: test/limits/parse-once.test.ts).
  const fields = { ...d };
  const tools = fields.tools === undefined ? undefined : Object.freeze([...fields.tools]);
  const concurrency = capOf(owner, fields, at);
  if (concurrency !== undefined) {
    if (fields.cost !== undefined)
      throw new InvalidOptionsError(owner, `${at}.cost`, `\`${at}.cost\` is a window's: an in-flight cap counts calls in flight, one each`);
    const cap: InFlightCap = Object.freeze({ name: fields.name, per: fields.per, concurrency, tools, onLimit: fields.onLimit ?? 'refuse' });
    CHECKED.add(cap);
    return cap;
  }
  const { kind, burst } = windowOf(owner, fields, at);
  const cost = fields.cost === undefined ? undefined : (args: unknown) => fields.cost!(args);
  const limit: Limit = Object.freeze({
    name: fields.name,
    per: fields.per,
    max: fields.max,
    windowMs: fields.windowMs,
    cost,
    tools,
    onLimit: fields.onLimit ?? 'refuse',
    kind,
    burst,
    concurrency: undefined,
  });
  CHECKED.add(limit);
  return limit;
}

/**
 * Checks a list of limits given as the option at `site` (`limits` of
 * `withToolReceipts`, say) and returns them checked. Refuses, with
 * `options.invalid` naming the field (`limits[1].windowMs`): anything but an
 * array, a definition that is not an object, a field its rule refuses
 * (a negative, NaN, fractional or zero `max`; a `windowMs` of 0 or over
 * {@link MAX_LIMIT_WINDOW_MS}; an unknown `per` or `kind`; a `cost` that is
 * not a function; an empty `tools`; a `burst` on a limit that is not a
 * bucket; a `concurrency` 0 or fractional, or given with a window or a
 * `cost`), an unknown field, and two limits of one name.
 * An array checked once (by an entry point's schema) answers from then on
 * with the same list, parsed no second time; so does a limit checked before
 * (`defineLimit`'s).
 */
export function checkLimits(value: unknown, site: OptionSite): AnyLimit[] {
  if (!Array.isArray(value)) throw refuseOption(site, 'an array of limits', value, true);
  const known = CHECKED_LISTS.get(value);
  // The same array, unchanged since (a caller may have edited it in between): the same list.
  if (known !== undefined && known.given.length === value.length && known.given.every((d, i) => d === value[i])) return known.limits;
  const limits = value.map((definition: unknown, i) => checked(site.owner, definition, `${site.option}[${i}]`));
  assertOneCountPerName(
    site.owner,
    limits.map((limit, i) => ({ limit, at: `${site.option}[${i}]` })),
  );
  CHECKED_LISTS.set(value, { given: [...value], limits });
  return limits;
}

/**
 * Refuses two limits of one name among `given` (each with where it was
 * given, `limits[1]` or `tools[2].limits[0]`), with `options.invalid`
 * naming the later one: one name is one count. `hint` says how to share a
 * count instead, where the list spans several tools.
 */
export function assertOneCountPerName(owner: string, given: readonly { limit: AnyLimit; at: string }[], hint = ''): void {
  const first = new Map<string, string>();
  for (const { limit, at } of given) {
    const earlier = first.get(limit.name);
    if (earlier !== undefined) {
      throw new InvalidOptionsError(
        owner,
        `${at}.name`,
        `\`${at}.name\` is ${JSON.stringify(limit.name)}, the name of \`${earlier}\` too; each limit needs its own name, which keys its count${hint}`,
      );
    }
    first.set(limit.name, at);
  }
}

/** The rule of a `limits` option, for an entry point's schema (see {@link checkLimits}). */
export const limitsOption: OptionRule = { check: (value, site) => void checkLimits(value, site) };

/**
 * One limit checked on its own (see {@link checkLimits}); throws
 * `options.invalid` naming the field. `Args` is what `cost` reads, given
 * (`defineLimit<{ cents: number }>(…)`) or taken from the type of `cost`'s
 * parameter; the limit keeps it, so on a tool whose input is something else
 * (`defineTool({ input, limits: [limit] })`) it does not compile.
 */
export function defineLimit(definition: InFlightCapDefinition): InFlightCap;
export function defineLimit<Args = unknown>(definition: LimitDefinition<Args>): Limit<Args>;
export function defineLimit(definition: AnyLimitDefinition): AnyLimit {
  return checked('defineLimit', definition, 'limit');
}

/** The limits among `limits` that cover the tool `toolName`, in their order. */
export function limitsOfTool<L extends AnyLimit>(limits: readonly L[], toolName: string): L[] {
  return limits.filter((limit) => limit.tools === undefined || limit.tools.includes(toolName));
}

/**
 * A limit's cost function threw, or returned something other than a whole
 * number of 0 or more (NaN, a fraction, a negative, a promise). The call
 * was not run: a cost that cannot be counted cannot be checked.
 */
export class LimitCostError extends ToolReceiptsError {
  readonly code = 'limit.invalid_cost';
  constructor(
    /** The limit whose cost failed. */
    readonly limit: string,
    got: string,
    options?: { cause?: unknown },
  ) {
    super(
      `the cost function of limit ${JSON.stringify(limit)} ${got}; it must return a whole number, 0 or more, in the limit's unit`,
      options,
    );
  }
}

/**
 * What one call with `args` uses of `limit`: 1 without a cost function, else
 * what the function returns. Throws {@link LimitCostError} when it throws or
 * returns anything but a safe whole number of 0 or more.
 */
export function costOf(limit: Limit, args: unknown): number {
  if (limit.cost === undefined) return 1;
  let value: unknown;
  try {
    value = limit.cost(args);
  } catch (error) {
    throw new LimitCostError(limit.name, 'threw (its error is the cause)', { cause: error });
  }
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
    throw new LimitCostError(limit.name, `returned ${shownValue(value)}`);
  return value;
}
