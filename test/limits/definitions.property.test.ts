/**
 * The pure half of the limits, against oracles written from their contract:
 * random lists of limit definitions are refused naming exactly the field that
 * is wrong (or accepted, with their defaults), costs are whole numbers or
 * refused, the window math holds for any clock and length, and the key
 * layout reads back and never lets two counts share a key.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidOptionsError } from '../../src/core/options.js';
import {
  checkLimits,
  costOf,
  defineLimit,
  durationText,
  fitsWindow,
  LimitCostError,
  limitRedisKeys,
  limitRefusalText,
  limitsOfTool,
  limitWindow,
  MAX_LIMIT_WINDOW_MS,
  parseLimitRedisKey,
  type LimitScope,
} from '../../src/limits/index.js';

const SITE = { owner: 'withToolReceipts', option: 'limits' };
const isWhole = (v: unknown, min: number, max = Number.MAX_SAFE_INTEGER) =>
  typeof v === 'number' && Number.isSafeInteger(v) && v >= min && v <= max;

/** One field's allowed values and the oracle of what is usable, from the documented contract. */
interface FieldCase {
  readonly required: boolean;
  readonly good: fc.Arbitrary<unknown>;
  usable(value: unknown): boolean;
}

const nameGood = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,20}$/);
const FIELDS: Record<string, FieldCase> = {
  name: { required: true, good: nameGood, usable: (v) => typeof v === 'string' && /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(v) },
  per: { required: true, good: fc.constantFrom('tenant', 'run', 'global'), usable: (v) => v === 'tenant' || v === 'run' || v === 'global' },
  max: { required: true, good: fc.integer({ min: 1, max: 1e9 }), usable: (v) => isWhole(v, 1) },
  windowMs: { required: true, good: fc.integer({ min: 1, max: MAX_LIMIT_WINDOW_MS }), usable: (v) => isWhole(v, 1, MAX_LIMIT_WINDOW_MS) },
  cost: { required: false, good: fc.constant((args: { n: number }) => args.n), usable: (v) => typeof v === 'function' },
  tools: {
    required: false,
    good: fc.array(
      fc.string({ minLength: 1, maxLength: 6 }).filter((s) => s.trim() !== ''),
      { minLength: 1, maxLength: 3 },
    ),
    usable: (v) => Array.isArray(v) && v.length > 0 && v.every((t) => typeof t === 'string' && t.trim() !== ''),
  },
  onLimit: { required: false, good: fc.constantFrom('refuse', 'wait'), usable: (v) => v === 'refuse' || v === 'wait' },
  // A bucket's own rules (its burst, bounded by its window) are test/limits/kinds.property.test.ts's.
  kind: { required: false, good: fc.constantFrom('fixed', 'sliding'), usable: (v) => v === 'fixed' || v === 'sliding' },
};

/** Values wrong for most fields, mixed with anything at all. */
const junk: fc.Arbitrary<unknown> = fc
  .oneof(
    fc.constantFrom<unknown>(
      Number.NaN,
      Infinity,
      -1,
      0,
      1.5,
      2 ** 53,
      MAX_LIMIT_WINDOW_MS + 1,
      '',
      ' ',
      'x:y',
      '-a',
      'a'.repeat(65),
      'minute',
      'tenants',
      null,
      true,
      [],
      [''],
      {},
      () => 1,
      5n,
    ),
    fc.integer({ min: -5, max: 5 }),
    fc.double(),
    fc.string({ maxLength: 6 }),
    fc.anything({ maxDepth: 1 }),
  )
  .filter((v) => v !== 'bucket');

type Spoil =
  | { kind: 'none' }
  | { kind: 'junk'; at: number; field: string; value: unknown }
  | { kind: 'unknown'; at: number; field: string }
  | { kind: 'not-an-object'; at: number; value: unknown }
  | { kind: 'duplicate'; at: number };

const definition = fc.record(
  Object.fromEntries(Object.entries(FIELDS).map(([name, c]) => [name, c.required ? c.good : fc.option(c.good, { nil: undefined })])),
) as fc.Arbitrary<Record<string, unknown>>;

/** A list of definitions with distinct names and at most one thing wrong, and the path the refusal must name (or none). */
const lists = fc
  .uniqueArray(definition, { minLength: 1, maxLength: 4, selector: (d) => d['name'] })
  .chain((defs) => {
    const at = fc.integer({ min: 0, max: defs.length - 1 });
    const field = fc.constantFrom(...Object.keys(FIELDS));
    const spoil: fc.Arbitrary<Spoil> = fc.oneof(
      fc.constant({ kind: 'none' as const }),
      fc.record({ kind: fc.constant('junk' as const), at, field, value: junk }),
      fc.record({ kind: fc.constant('unknown' as const), at, field: fc.constantFrom('window', 'maxCalls', 'scope', 'nameX', 'limit') }),
      fc.record({ kind: fc.constant('not-an-object' as const), at, value: fc.constantFrom<unknown>(null, 3, 'emails', [], () => 1) }),
      ...(defs.length > 1
        ? [fc.record({ kind: fc.constant('duplicate' as const), at: fc.integer({ min: 1, max: defs.length - 1 }) })]
        : []),
    );
    return fc.tuple(fc.constant(defs), spoil);
  })
  .map(([defs, spoil]) => {
    const list: unknown[] = defs.map((d) => Object.fromEntries(Object.entries(d).filter(([, v]) => v !== undefined)));
    let wrong: string | undefined;
    if (spoil.kind === 'junk') {
      const target = list[spoil.at] as Record<string, unknown>;
      const c = FIELDS[spoil.field]!;
      const usable = spoil.value === undefined ? !c.required : c.usable(spoil.value);
      if (spoil.value === undefined) delete target[spoil.field];
      else target[spoil.field] = spoil.value;
      if (!usable) wrong = `limits[${spoil.at}].${spoil.field}`;
    } else if (spoil.kind === 'unknown') {
      (list[spoil.at] as Record<string, unknown>)[spoil.field] = 1;
      wrong = `limits[${spoil.at}].${spoil.field}`;
    } else if (spoil.kind === 'not-an-object') {
      list[spoil.at] = spoil.value;
      wrong = `limits[${spoil.at}]`;
    } else if (spoil.kind === 'duplicate') {
      (list[spoil.at] as Record<string, unknown>)['name'] = (list[0] as Record<string, unknown>)['name'];
      wrong = `limits[${spoil.at}].name`;
    }
    // A junk name may happen to equal another's: then the duplicate is what is wrong.
    if (wrong === undefined) {
      const names = list.map((d) => (d as Record<string, unknown>)['name']);
      const dup = names.findIndex((n, i) => names.indexOf(n) !== i);
      if (dup >= 0) wrong = `limits[${dup}].name`;
    }
    return { list, wrong };
  });

describe('limit definitions', () => {
  it('a list is refused with options.invalid naming exactly the wrong field, or accepted with its defaults', () => {
    const seen = { refused: 0, accepted: 0 };
    fc.assert(
      fc.property(lists, ({ list, wrong }) => {
        let checked;
        try {
          checked = checkLimits(list, SITE);
        } catch (error) {
          expect(error).toBeInstanceOf(InvalidOptionsError);
          const { code, option } = error as InvalidOptionsError;
          // An item of `tools` is named itself: `limits[0].tools[1]`.
          expect({ code, option: option?.replace(/^(limits\[\d+\]\.tools)\[\d+\]$/, '$1') }).toEqual({
            code: 'options.invalid',
            option: wrong,
          });
          expect((error as Error).message).toMatch(/^withToolReceipts: /);
          seen.refused++;
          return;
        }
        expect(wrong).toBeUndefined();
        seen.accepted++;
        expect(checked).toHaveLength(list.length);
        checked.forEach((limit, i) => {
          const given = list[i] as Record<string, unknown>;
          expect(limit).toMatchObject({
            name: given['name'],
            per: given['per'],
            max: given['max'],
            windowMs: given['windowMs'],
            onLimit: given['onLimit'] ?? 'refuse',
            kind: given['kind'] ?? 'fixed',
          });
          expect(limit.tools).toEqual(given['tools']);
          expect(limit.cost === undefined).toBe(given['cost'] === undefined);
          expect(Object.isFrozen(limit)).toBe(true);
        });
      }),
      { numRuns: 1000 },
    );
    expect(seen.refused).toBeGreaterThan(200);
    expect(seen.accepted).toBeGreaterThan(100);
  });

  it('refuses what is not a list, and names the closest field for a misspelt one', () => {
    for (const value of [undefined, null, 'emails', {}, 3]) expect(() => checkLimits(value, SITE)).toThrow(InvalidOptionsError);
    expect(() => defineLimit({ name: 'emails', per: 'tenant', max: 3, windowMS: 1000 } as never)).toThrow(/did you mean `windowMs`\?/);
    expect(() => defineLimit({ name: 'emails', per: 'tenant', max: 3, windowMs: 0 })).toThrow(
      /`limit\.windowMs` must be a whole number of ms, from 1 to/,
    );
  });

  it('picks the limits of a tool: those naming it, and those for every tool', () => {
    const all = defineLimit({ name: 'all', per: 'global', max: 1, windowMs: 1000 });
    const mail = defineLimit({ name: 'mail', per: 'run', max: 1, windowMs: 1000, tools: ['send_email'] });
    expect(limitsOfTool([all, mail], 'send_email')).toEqual([all, mail]);
    expect(limitsOfTool([all, mail], 'search')).toEqual([all]);
  });

  it('a cost is the whole number the function returns; anything else, or a throw, is limit.invalid_cost', () => {
    expect(costOf(defineLimit({ name: 'n', per: 'run', max: 1, windowMs: 1 }), { anything: true })).toBe(1);
    fc.assert(
      fc.property(
        fc.oneof(
          fc.integer({ min: -5, max: 1e6 }),
          fc.double(),
          fc.constantFrom<unknown>(2 ** 53, '3', null, undefined, Promise.resolve(1), 3n),
        ),
        (value) => {
          const limit = defineLimit({ name: 'spend', per: 'tenant', max: 10, windowMs: 1000, cost: () => value as number });
          const usable = typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
          if (usable) expect(costOf(limit, {})).toBe(value);
          else expect(() => costOf(limit, {})).toThrow(LimitCostError);
        },
      ),
    );
    const boom = new Error('no tokens field');
    const throws = defineLimit({
      name: 'spend',
      per: 'tenant',
      max: 10,
      windowMs: 1000,
      cost: () => {
        throw boom;
      },
    });
    expect(() => costOf(throws, {})).toThrow(expect.objectContaining({ code: 'limit.invalid_cost', limit: 'spend', cause: boom }));
  });
});

describe('fixed windows', () => {
  const clock = fc.integer({ min: 0, max: 4_102_444_800_000 }); // up to 2100
  const length = fc.oneof(
    fc.integer({ min: 1, max: 10_000 }),
    fc.integer({ min: 1, max: MAX_LIMIT_WINDOW_MS }),
    fc.constantFrom(1000, 60_000, 3_600_000, 86_400_000),
  );

  it('hold their moment, start at a multiple of their length, and follow one another', () => {
    fc.assert(
      fc.property(clock, length, fc.integer({ min: 0, max: MAX_LIMIT_WINDOW_MS }), (now, windowMs, step) => {
        const w = limitWindow(now, windowMs);
        expect(w.startMs <= now && now < w.resetsAtMs).toBe(true);
        expect(w.startMs % windowMs).toBe(0);
        expect(w.resetsAtMs - w.startMs).toBe(windowMs);
        const later = limitWindow(now + step, windowMs);
        // The same window exactly when the later moment is before the reset; else a later one, also aligned.
        if (now + step < w.resetsAtMs) expect(later).toEqual(w);
        else expect(later.startMs).toBeGreaterThanOrEqual(w.resetsAtMs);
        expect(limitWindow(w.resetsAtMs, windowMs).startMs).toBe(w.resetsAtMs);
      }),
    );
  });

  it('fit an amount exactly when the sum stays within max', () => {
    fc.assert(
      fc.property(fc.nat(1e6), fc.nat(1e6), fc.integer({ min: 1, max: 1e6 }), (used, amount, max) => {
        expect(fitsWindow(used, amount, max)).toBe(used + amount <= max);
      }),
    );
  });

  it('are said in the largest unit that divides them, and the refusal names the limit and its reset', () => {
    const units: Record<string, number> = { day: 86_400_000, days: 86_400_000, h: 3_600_000, min: 60_000, s: 1000, ms: 1 };
    fc.assert(
      fc.property(length, (ms) => {
        const [count, unit] = durationText(ms).split(' ') as [string, string];
        expect(Number(count) * units[unit]!).toBe(ms);
      }),
    );
    const facts = {
      limit: 'emails',
      per: 'tenant' as const,
      max: 100,
      windowMs: 3_600_000,
      amount: 1,
      resetsAtMs: Date.UTC(2030, 0, 1, 13),
    };
    expect(limitRefusalText({ ...facts, why: 'full' })).toBe(
      'This call was not run: the limit "emails" (at most 100 per tenant every 1 h) is used up until it resets at 2030-01-01T13:00:00.000Z.',
    );
    expect(limitRefusalText({ ...facts, why: 'exceeds_max', amount: 120 })).toBe(
      'This call was not run: it would use 120 of the limit "emails", which allows at most 100 per tenant every 1 h, so it can never fit.',
    );
    // The other kinds name when the call may fit, in their own words.
    expect(limitRefusalText({ ...facts, why: 'full', kind: 'sliding' })).toBe(
      'This call was not run: the limit "emails" (at most 100 per tenant in any 1 h) has no room for it before 2030-01-01T13:00:00.000Z.',
    );
    expect(limitRefusalText({ ...facts, why: 'full', kind: 'bucket', burst: 10 })).toBe(
      'This call was not run: the limit "emails" (100 per tenant every 1 h, at most 10 at once) has no room for it before 2030-01-01T13:00:00.000Z.',
    );
    expect(limitRefusalText({ ...facts, why: 'held', kind: 'sliding', freesAtMs: Date.UTC(2030, 0, 1, 12, 0, 30) })).toBe(
      'This call was not run: the limit "emails" (at most 100 per tenant in any 1 h) is taken by calls that have not started yet; if they do not run, their shares come back by 2030-01-01T12:00:30.000Z.',
    );
  });
});

describe('limit keys', () => {
  const text = fc.oneof(fc.string({ minLength: 1, maxLength: 8 }), fc.constantFrom('a|b', '{x}', 'a:b', '%', 'ü', 'x y'));
  const count = fc.record({
    per: fc.constantFrom<LimitScope>('tenant', 'run', 'global'),
    name: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,8}$/),
    tenantId: text,
    runId: text,
  });
  /** What a count is of: the scope, the name, and only the parts of the subject its scope uses. */
  const identity = (c: { per: LimitScope; name: string; tenantId: string; runId: string }) =>
    c.per === 'global' ? { per: c.per, name: c.name } : c.per === 'tenant' ? { per: c.per, name: c.name, tenantId: c.tenantId } : c;

  it('read back to the count they key, and two different counts never share a key', () => {
    fc.assert(
      fc.property(count, count, (a, b) => {
        const ka = limitRedisKeys('trc', a, a);
        expect(parseLimitRedisKey('trc', ka.state)).toEqual(identity(a));
        expect(parseLimitRedisKey('trc', ka.due)).toBeUndefined();
        expect(parseLimitRedisKey('trc:x', ka.state)).toBeUndefined();
        const kb = limitRedisKeys('trc', b, b);
        expect(ka.state === kb.state).toBe(JSON.stringify(identity(a)) === JSON.stringify(identity(b)));
        // One hash tag for the three keys of a count.
        const tag = (key: string) => /\{[^}]*\}/.exec(key)![0];
        expect(new Set([tag(ka.state), tag(ka.due), tag(ka.done)]).size).toBe(1);
      }),
    );
  });
});
