/**
 * The rules between a limit definition's fields that say how its window
 * moves (`kind`, `burst`) and an in-flight cap (`concurrency`, which takes
 * no window), against an oracle written from docs/limits.md: random
 * definitions are accepted with the documented defaults, or refused with
 * `options.invalid` naming exactly the field at fault, where the processor
 * is made too.
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, withToolReceipts } from '../../src/bullmq/index.js';
import { InvalidOptionsError } from '../../src/core/options.js';
import { checkLimits, defineLimit, MAX_BUCKET_SPAN, MAX_LIMIT_WINDOW_MS } from '../../src/limits/index.js';
import { silent } from '../bullmq/fixture.js';

const SITE = { owner: 'withToolReceipts', option: 'limits' };

const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
/** Left out most of the time: each of these refuses most definitions that give it. */
const rarely = <T>(arb: fc.Arbitrary<T>) => fc.oneof({ arbitrary: fc.constant(undefined), weight: 4 }, { arbitrary: arb, weight: 1 });
/** Each field of the window's rules: usually well-formed, sometimes left out, now and then wrong on its own. */
const definition = fc.record({
  max: fc.oneof({ arbitrary: fc.integer({ min: 1, max: 1e9 }), weight: 6 }, fc.constantFrom(undefined, undefined, undefined, 0, 1.5, -2)),
  windowMs: maybe(fc.oneof(fc.integer({ min: 1, max: MAX_LIMIT_WINDOW_MS }), fc.integer({ min: 1, max: 10_000 }), fc.constant(0))),
  kind: maybe(fc.oneof(fc.constantFrom('fixed', 'sliding', 'bucket'), fc.constantFrom('leaky', 'Sliding', 'gcra', ''))),
  burst: rarely(fc.oneof(fc.integer({ min: 1, max: 1e6 }), fc.constantFrom(0, 2.5))),
  concurrency: rarely(fc.oneof(fc.integer({ min: 1, max: 100 }), fc.constantFrom(0, 0.5, 3.25, -1, Number.NaN))),
});

type Given = { [K in 'max' | 'windowMs' | 'kind' | 'burst' | 'concurrency']?: unknown };
const whole = (v: unknown, min: number, max = Number.MAX_SAFE_INTEGER) =>
  typeof v === 'number' && Number.isSafeInteger(v) && v >= min && v <= max;

/** The field the refusal must name, from the documented rules: each field's own first, in schema order; then between fields. */
function faultOf(d: Given): string | undefined {
  if (d.max !== undefined && !whole(d.max, 1)) return 'max';
  if (d.windowMs !== undefined && !whole(d.windowMs, 1, MAX_LIMIT_WINDOW_MS)) return 'windowMs';
  if (d.kind !== undefined && !['fixed', 'sliding', 'bucket'].includes(d.kind as string)) return 'kind';
  if (d.burst !== undefined && !whole(d.burst, 1)) return 'burst';
  if (d.concurrency !== undefined && !whole(d.concurrency, 1)) return 'concurrency';
  if (d.concurrency !== undefined) {
    // A cap: accepted alone, refused with any field of a window.
    return [d.max, d.windowMs, d.kind, d.burst].some((v) => v !== undefined) ? 'concurrency' : undefined;
  }
  if (d.max === undefined) return 'max';
  if (d.windowMs === undefined) return 'windowMs';
  if (d.kind !== 'bucket') return d.burst === undefined ? undefined : 'burst';
  const burst = (d.burst ?? d.max) as number;
  if (burst * (d.windowMs as number) > MAX_BUCKET_SPAN) return d.burst === undefined ? 'max' : 'burst';
  return undefined;
}

describe('the kind of a limit, its burst, and an in-flight cap', () => {
  it('are accepted with their defaults or refused naming exactly the field at fault', () => {
    const seen = new Map<string, number>();
    fc.assert(
      fc.property(definition, (fields) => {
        const given = Object.fromEntries(Object.entries({ name: 'n', per: 'tenant', ...fields }).filter(([, v]) => v !== undefined));
        const fault = faultOf(fields);
        seen.set(fault ?? 'none', (seen.get(fault ?? 'none') ?? 0) + 1);
        if (fault !== undefined) {
          expect(() => checkLimits([given], SITE)).toThrow(
            expect.objectContaining({ code: 'options.invalid', option: `limits[0].${fault}` }) as Error,
          );
          return;
        }
        const [limit] = checkLimits([given], SITE);
        if (fields.concurrency !== undefined) {
          expect(limit).toEqual({ name: 'n', per: 'tenant', concurrency: fields.concurrency, tools: undefined, onLimit: 'refuse' });
          return;
        }
        const kind = (fields.kind ?? 'fixed') as string;
        expect(limit).toMatchObject({ kind, burst: kind === 'bucket' ? (fields.burst ?? fields.max) : undefined, concurrency: undefined });
      }),
      { numRuns: 2000 },
    );
    // Every rule was met, and definitions of every kind were accepted.
    for (const outcome of ['none', 'max', 'windowMs', 'kind', 'burst', 'concurrency']) expect(seen.get(outcome) ?? 0).toBeGreaterThan(20);
  });

  it('an in-flight cap alone is accepted for a whole concurrency from 1, and refused naming it otherwise', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.integer({ min: 1, max: 1e6 }), fc.double(), fc.integer({ min: -5, max: 0 })),
        fc.constantFrom('tenant', 'run', 'global'),
        (k, per) => {
          const given = { name: 'cap', per, concurrency: k };
          if (!whole(k, 1)) {
            expect(() => checkLimits([given], SITE)).toThrow(expect.objectContaining({ option: 'limits[0].concurrency' }) as Error);
            return;
          }
          expect(checkLimits([given], SITE)).toEqual([{ ...given, tools: undefined, onLimit: 'refuse' }]);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('say what is wrong in a sentence', () => {
    const base = { name: 'browse', per: 'tenant' } as const;
    const refusal = (definition: object) => {
      try {
        defineLimit(definition as never);
      } catch (error) {
        expect(error).toBeInstanceOf(InvalidOptionsError);
        return (error as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refusal({ ...base, concurrency: 0 })).toMatch(/`limit\.concurrency` must be a whole number, at least 1; got 0/);
    expect(refusal({ ...base, concurrency: 2.5 })).toMatch(/`limit\.concurrency` must be a whole number, at least 1; got 2\.5/);
    expect(refusal({ ...base, concurrency: 3, max: 5, windowMs: 1000 })).toMatch(
      /`limit\.concurrency` caps calls in flight, not calls per window: give it without `max`, `windowMs`/,
    );
    expect(refusal({ ...base, concurrency: 3, cost: () => 1 })).toMatch(
      /`limit\.cost` is a window's: an in-flight cap counts calls in flight/,
    );
    expect(defineLimit({ ...base, concurrency: 3, onLimit: 'wait' })).toEqual({
      ...base,
      concurrency: 3,
      tools: undefined,
      onLimit: 'wait',
    });
    expect(refusal({ ...base, max: 5, windowMs: 1000, kind: 'leaky' })).toMatch(
      /`limit\.kind` must be "fixed" or "sliding" or "bucket"; got "leaky"/,
    );
    expect(refusal({ ...base, max: 5, windowMs: 1000, burst: 2 })).toMatch(/`limit\.burst` is a token bucket's/);
  });
});

describe('a processor given a bad definition', () => {
  const redis = new Redis({ lazyConnect: true });
  afterAll(() => redis.disconnect());
  const tool = (limits?: unknown[]) =>
    defineTool({
      name: 'browse',
      input: z.object({}),
      effect: 'opaque',
      ...(limits ? { limits: limits as never } : {}),
      execute: () => 'done',
    });

  it('is not made: options.invalid names the field where it was given', () => {
    const make = (limits: unknown[], own?: unknown[]) => () =>
      withToolReceipts({ redis, tools: [tool(own)], limits: limits as never, logger: silent });
    const cases: [() => unknown, string][] = [
      [make([{ name: 'a', per: 'tenant', concurrency: 0 }]), 'limits[0].concurrency'],
      [
        make([
          { name: 'a', per: 'tenant', max: 1, windowMs: 1000 },
          { name: 'b', per: 'run', concurrency: 1.5 },
        ]),
        'limits[1].concurrency',
      ],
      [make([], [{ name: 'a', per: 'tenant', concurrency: 2, windowMs: 1000 }]), 'tools[0].limits[0].concurrency'],
      [make([{ name: 'a', per: 'global', max: 3, windowMs: 1000, kind: 'smooth' }]), 'limits[0].kind'],
      [make([], [{ name: 'a', per: 'tenant', max: 3, windowMs: 1000, kind: 'sliding', burst: 2 }]), 'tools[0].limits[0].burst'],
    ];
    for (const [made, option] of cases) {
      expect(made).toThrow(expect.objectContaining({ code: 'options.invalid', option }) as Error);
    }
    expect(() =>
      make(
        [
          { name: 'a', per: 'tenant', max: 3, windowMs: 1000, kind: 'sliding' },
          { name: 'b', per: 'tenant', max: 3, windowMs: 1000, kind: 'bucket', burst: 2 },
          { name: 'c', per: 'global', concurrency: 5, tools: ['browse'] },
        ],
        [{ name: 'd', per: 'run', concurrency: 1, onLimit: 'wait' }],
      )(),
    ).not.toThrow();
    // One name is one count, a cap's as a window's.
    expect(make([{ name: 'a', per: 'tenant', concurrency: 2 }], [{ name: 'a', per: 'tenant', max: 1, windowMs: 1000 }])).toThrow(
      expect.objectContaining({ code: 'options.invalid', option: 'tools[0].limits[0].name' }) as Error,
    );
  });
});
