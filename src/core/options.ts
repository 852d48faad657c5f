/**
 * Checking the options a user passes to an entry point (`withToolReceipts`,
 * the stores, the client, the doctor), where they are given: one schema per
 * entry point, made of the small rules below. A value that cannot work (a
 * wrong type, NaN, Infinity, a negative, an empty string, an option name the
 * entry point does not know) is refused at once with {@link InvalidOptionsError},
 * instead of surfacing later as a hot loop, a TypeError or a silent no-op.
 *
 * Objects the user hands over (a connection, a logger, a store) are checked
 * for their shape only: the methods the library calls are there.
 */
import { ToolReceiptsError } from './errors.js';

/**
 * An entry point was given an option it cannot use. `option` names it (a
 * dotted path for a nested one, e.g. `durability.timeoutMs`); the message
 * says what was given and what is wanted, or, for an unknown option name,
 * which known one is close.
 */
export class InvalidOptionsError extends ToolReceiptsError {
  readonly code = 'options.invalid';
  constructor(
    /** The entry point that refused: `withToolReceipts`, `ReceiptStore`, … */
    readonly owner: string,
    /** The option refused; `undefined` when the options as a whole are unusable. */
    readonly option: string | undefined,
    message: string,
  ) {
    super(`${owner}: ${message}`);
  }
}

/** Where a rule is being applied: who was given the option, and its name (dotted when nested). */
export interface OptionSite {
  readonly owner: string;
  readonly option: string;
}

/** One option's rule: throws {@link InvalidOptionsError} for a given (not `undefined`) value it cannot use. */
export interface OptionRule {
  /** The option must be given. */
  readonly required?: boolean;
  check(value: unknown, site: OptionSite): void;
}

/** One rule per option of `T`: a key `T` has and the schema lacks, or the reverse, does not compile. */
export type OptionsSchema<T> = { readonly [K in keyof T]-?: OptionRule };

/**
 * How a refused value is shown. Numbers, booleans, null and undefined as
 * they are (`NaN`, `-1000`); a string quoted (cut at 60 characters) unless
 * `hideStrings` (a string where a function or an object is wanted may be a
 * secret pasted into the wrong option); anything else by its kind.
 */
export function shownValue(value: unknown, hideStrings = false): string {
  if (value === null || value === undefined || typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'string') {
    if (value === '') return 'an empty string';
    if (hideStrings) return 'a string';
    return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  }
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'symbol' ? 'a symbol' : 'an object';
}

/** The refusal of `value` for the option at `site`, which wants `wants`. */
export function refuseOption(site: OptionSite, wants: string, value: unknown, hideStrings = false): InvalidOptionsError {
  return new InvalidOptionsError(site.owner, site.option, `\`${site.option}\` must be ${wants}; got ${shownValue(value, hideStrings)}`);
}

/** A rule from a predicate: values it rejects are refused with "must be `wants`". */
export function rule(wants: string, accepts: (value: unknown) => boolean, options: { hideStrings?: boolean } = {}): OptionRule {
  return {
    check(value, site) {
      if (!accepts(value)) throw refuseOption(site, wants, value, options.hideStrings);
    },
  };
}

/** The same rule, but the option must be given. */
export function required(inner: OptionRule): OptionRule {
  return { required: true, check: (value, site) => inner.check(value, site) };
}

/** The same rule, but `null` is accepted too. */
export function nullable(inner: OptionRule): OptionRule {
  return {
    check(value, site) {
      if (value !== null) inner.check(value, site);
    },
  };
}

/** The longest delay a Node timer honours (a longer one fires at once): about 24.8 days. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A whole number (a safe integer) from `min` to `max`: `unit` names what it
 * counts, e.g. `ms`.
 */
export function wholeNumber(min: number, unit?: string, max = Number.MAX_SAFE_INTEGER): OptionRule {
  const of = unit === undefined ? '' : ` of ${unit}`;
  const bound = max < Number.MAX_SAFE_INTEGER ? `from ${min} to ${max}` : min === 0 ? '0 or more' : `at least ${min}`;
  return rule(`a whole number${of}, ${bound}`, (v) => typeof v === 'number' && Number.isSafeInteger(v) && v >= min && v <= max);
}

/** A string with something other than whitespace in it. */
export const nonBlankString: OptionRule = rule('a non-empty string', (v) => typeof v === 'string' && v.trim() !== '');

/** `true` or `false`. */
export const booleanOption: OptionRule = rule('true or false', (v) => typeof v === 'boolean');

/** One of the given strings. */
export function oneOf(...choices: readonly string[]): OptionRule {
  return rule(choices.map((c) => JSON.stringify(c)).join(' or '), (v) => typeof v === 'string' && choices.includes(v));
}

/** A function (a digest, say). */
export function functionOption(wants: string): OptionRule {
  return rule(wants, (v) => typeof v === 'function', { hideStrings: true });
}

/** An object (or function) with every one of `methods` as a function: checked for shape, not deep-validated. */
export function shaped(wants: string, methods: readonly string[]): OptionRule {
  return rule(
    wants,
    (v) =>
      (typeof v === 'object' || typeof v === 'function') &&
      v !== null &&
      methods.every((m) => typeof (v as Record<string, unknown>)[m] === 'function'),
    { hideStrings: true },
  );
}

/** Something `for … of` can walk, other than a string (which would be walked by character). */
export function iterableOption(wants: string): OptionRule {
  return rule(wants, (v) => typeof v === 'object' && v !== null && typeof (v as Iterable<unknown>)[Symbol.iterator] === 'function', {
    hideStrings: true,
  });
}

/** An array of non-empty strings (not one string, which would be read by character). */
export const stringList: OptionRule = {
  check(value, site) {
    if (!Array.isArray(value)) throw refuseOption(site, 'an array of non-empty strings', value);
    value.forEach((item, i) => {
      if (typeof item !== 'string' || item.trim() === '') {
        throw refuseOption({ owner: site.owner, option: `${site.option}[${i}]` }, 'a non-empty string', item);
      }
    });
  },
};

/** A plain object whose keys are the caller's own (passed on, e.g. to BullMQ); only its type is checked. */
export const objectOption: OptionRule = rule('an object', (v) => typeof v === 'object' && v !== null && !Array.isArray(v));

/**
 * Checks `options` against `schema` for the entry point `owner` and returns
 * it typed (`at` names the options object when it is itself an option, as
 * `durability` is). Refuses a missing or non-object `options`, a required option not
 * given, an option its rule refuses, and an option name the schema does not
 * know (naming the closest known one when there is one). Options left
 * `undefined` count as not given.
 */
export function checkOptions<T>(owner: string, options: unknown, schema: OptionsSchema<T>, at?: string): T {
  const names = Object.keys(schema);
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    const what = at === undefined ? 'the options' : `\`${at}\``;
    throw new InvalidOptionsError(owner, at, `${what} must be an object with ${listNames(names)}; got ${shownValue(options, true)}`);
  }
  const given = options as Record<string, unknown>;
  for (const name of Object.keys(given)) {
    if (given[name] === undefined || Object.hasOwn(schema, name)) continue;
    const option = at === undefined ? name : `${at}.${name}`;
    const near = closestName(name, names);
    const hint = near === undefined ? `the options are ${listNames(names)}` : `did you mean \`${near}\`?`;
    throw new InvalidOptionsError(owner, option, `unknown option \`${option}\`; ${hint}`);
  }
  for (const name of names) {
    const ruleOf = (schema as Record<string, OptionRule>)[name]!;
    const option = at === undefined ? name : `${at}.${name}`;
    const value = given[name];
    if (value === undefined) {
      if (!ruleOf.required) continue;
      ruleOf.check(value, { owner, option }); // a rule may name what is missing in its own words
      throw new InvalidOptionsError(owner, option, `\`${option}\` is required`);
    }
    ruleOf.check(value, { owner, option });
  }
  return options as T;
}

function listNames(names: readonly string[]): string {
  return names.map((n) => `\`${n}\``).join(', ');
}

/**
 * The Levenshtein distance between `a` and `b`: the fewest single-character
 * insertions, deletions and substitutions (of UTF-16 code units) turning one
 * into the other.
 */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * The known name closest to a mistyped one, compared without case, when it
 * is close enough to be the one meant: at most a third of its length away
 * (at least two edits allowed), or one contains the other. Ties go to the
 * first in `known`. `undefined` when none is close.
 */
export function closestName(typed: string, known: readonly string[]): string | undefined {
  const lower = typed.toLowerCase();
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const candidate = name.toLowerCase();
    const distance = editDistance(lower, candidate);
    const contains = lower.length >= 3 && (candidate.includes(lower) || lower.includes(candidate));
    const close = contains || distance <= Math.max(2, Math.floor(name.length / 3));
    if (close && (best === undefined || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}
