import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { canonicalJson, CanonicalJsonError, CANONICAL_JSON_MAX_DEPTH } from '../../src/core/canonical-json.js';

/** Rebuilds every object of a JSON value with its keys inserted in a shuffled order. */
function reorderKeys(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((v, i) => reorderKeys(v, seed + i + 1));
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    const shuffled = entries
      .map((e, i) => ({ e, w: Math.sin(seed * 997 + i * 31) }))
      .sort((a, b) => a.w - b.w)
      .map(({ e }) => e);
    // defineProperty, not assignment: fast-check generates "__proto__" keys, and
    // `out[k] = v` would set the prototype instead of an own key.
    const out: Record<string, unknown> = {};
    for (const [k, v] of shuffled) {
      Object.defineProperty(out, k, { value: reorderKeys(v, seed + 7), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return value;
}

function expectThrowsCode(fn: () => unknown, code: string): CanonicalJsonError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(CanonicalJsonError);
    expect((err as CanonicalJsonError).code).toBe(code);
    return err as CanonicalJsonError;
  }
  throw new Error(`expected a ${code} error`);
}

describe('canonicalJson', () => {
  it('sorts keys by UTF-16 code units and keeps array order', () => {
    expect(canonicalJson({ b: 2, a: 1, B: 0 })).toBe('{"B":0,"a":1,"b":2}');
    expect(canonicalJson([3, 1, 2])).toBe('[3,1,2]');
    // U+FF61 sorts after U+1F600's high surrogate (0xD83D) by code unit, not by code point.
    expect(canonicalJson({ '\uff61': 1, '\u{1F600}': 2 })).toBe('{"\u{1F600}":2,"\uff61":1}');
  });

  it('writes undefined object values and array holes as null', () => {
    expect(canonicalJson({ a: undefined })).toBe('{"a":null}');
    expect(canonicalJson([undefined, 1])).toBe('[null,1]');
    // eslint-disable-next-line no-sparse-arrays
    expect(canonicalJson([1, , 3])).toBe('[1,null,3]');
    expect(canonicalJson(undefined)).toBe('null');
  });

  it('honours toJSON like JSON.stringify, including the key argument', () => {
    const d = new Date('2026-01-02T03:04:05.006Z');
    expect(canonicalJson({ when: d })).toBe('{"when":"2026-01-02T03:04:05.006Z"}');
    const keyed = { toJSON: (k: string) => `key=${k}` };
    expect(canonicalJson({ x: keyed })).toBe('{"x":"key=x"}');
    class Money {
      constructor(readonly cents: number) {}
      toJSON() {
        return { cents: this.cents, currency: 'EUR' };
      }
    }
    expect(canonicalJson(new Money(5))).toBe('{"cents":5,"currency":"EUR"}');
  });

  it('writes numbers in shortest round-trip form and unboxes primitives', () => {
    expect(canonicalJson([1e21, 0.1, -0, 1.5e-7, 123456789012345680000])).toBe(
      JSON.stringify([1e21, 0.1, -0, 1.5e-7, 123456789012345680000]),
    );
    expect(canonicalJson([new Number(2), new String('s'), new Boolean(false)])).toBe('[2,"s",false]');
  });

  it('treats an own "__proto__" key (as JSON.parse makes it) as an ordinary key', () => {
    const parsed = JSON.parse('{"z":1,"__proto__":[2],"a":{"__proto__":null}}') as unknown;
    expect(canonicalJson(parsed)).toBe('{"__proto__":[2],"a":{"__proto__":null},"z":1}');
  });

  it('accepts null-prototype objects', () => {
    const o = Object.create(null) as Record<string, unknown>;
    o.z = 1;
    o.a = 2;
    expect(canonicalJson(o)).toBe('{"a":2,"z":1}');
  });

  it.each([
    ['Map', () => new Map([[1, 2]]), 'canonical_json.unsupported_type'],
    ['Set', () => new Set([1]), 'canonical_json.unsupported_type'],
    [
      'class instance',
      () =>
        new (class Point {
          x = 1;
        })(),
      'canonical_json.unsupported_type',
    ],
    ['function', () => () => 1, 'canonical_json.unsupported_type'],
    ['symbol', () => Symbol('s'), 'canonical_json.unsupported_type'],
    ['BigInt', () => 10n, 'canonical_json.unsupported_type'],
    ['NaN', () => NaN, 'canonical_json.non_finite_number'],
    ['Infinity', () => Infinity, 'canonical_json.non_finite_number'],
    ['-Infinity', () => -Infinity, 'canonical_json.non_finite_number'],
  ])('throws for a %s, nested or not', (_label, make, code) => {
    expectThrowsCode(() => canonicalJson(make()), code);
    const err = expectThrowsCode(() => canonicalJson({ outer: [{ inner: make() }] }), code);
    expect(err.path).toBe('$.outer[0].inner');
  });

  it('writes keys in UTF-16 code unit order, few or many, flat or nested (property)', () => {
    // Up to 16 keys are ordered in place, more by Array.prototype.sort: both sides of that line, on both paths.
    const bag = fc.dictionary(fc.string({ unit: 'binary' }), fc.integer(), { minKeys: 0, maxKeys: 40 });
    fc.assert(
      fc.property(bag, fc.nat(), (value, seed) => {
        const ordered = Object.keys(value).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
        const expected = `{${ordered.map((key) => `${JSON.stringify(key)}:${value[key]}`).join(',')}}`;
        expect(canonicalJson(reorderKeys(value, seed))).toBe(expected);
        expect(canonicalJson([{ nested: reorderKeys(value, seed) }])).toBe(`[{"nested":${expected}}]`);
      }),
    );
  });

  it('writes a flat argument bag as it writes the same bag nested (property)', () => {
    const outcome = (write: () => string): { text?: string; code?: string } => {
      try {
        return { text: write() };
      } catch (error) {
        return { code: (error as CanonicalJsonError).code };
      }
    };
    // A plain object of scalars takes a one-pass path; nested, the same object goes through the walk.
    const scalar = fc.oneof(
      fc.string(),
      fc.double(),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
      fc.constant(undefined),
      fc.constant(-0),
    );
    fc.assert(
      fc.property(fc.dictionary(fc.string(), scalar), (bag) => {
        const nested = outcome(() => canonicalJson({ x: [bag] }));
        const flat = outcome(() => canonicalJson(bag));
        // A number with no JSON form throws the same error either way.
        expect(nested).toEqual(flat.text === undefined ? flat : { text: `{"x":[${flat.text}]}` });
      }),
    );
  });

  it('names the path of a value it cannot represent, wherever it sits (property)', () => {
    // A JSON value with a NaN planted at a random spot: the error names that spot exactly.
    const segments = fc.array(
      fc.oneof(
        fc.nat({ max: 3 }).map((i) => ({ index: i })),
        fc.string({ maxLength: 4 }).map((key) => ({ key })),
      ),
      { maxLength: 6 },
    );
    fc.assert(
      fc.property(segments, fc.jsonValue({ maxDepth: 2 }), (path, filler) => {
        let value: unknown = NaN;
        let expected = '';
        for (const segment of [...path].reverse()) {
          if ('index' in segment) {
            value = [...Array.from({ length: segment.index }, () => filler), value];
            expected = `[${segment.index}]${expected}`;
          } else {
            const holder: Record<string, unknown> = {};
            Object.defineProperty(holder, segment.key, { value, enumerable: true, writable: true, configurable: true });
            value = holder;
            expected = (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(segment.key) ? `.${segment.key}` : `[${JSON.stringify(segment.key)}]`) + expected;
          }
        }
        const err = expectThrowsCode(() => canonicalJson(value), 'canonical_json.non_finite_number');
        expect(err.path).toBe(`$${expected}`);
      }),
    );
  });

  it('throws on a cycle but accepts a shared (acyclic) reference', () => {
    const a: Record<string, unknown> = { n: 1 };
    a.self = a;
    expectThrowsCode(() => canonicalJson(a), 'canonical_json.cycle');
    const arr: unknown[] = [];
    arr.push([arr]);
    expectThrowsCode(() => canonicalJson(arr), 'canonical_json.cycle');
    const shared = { v: 1 };
    expect(canonicalJson({ x: shared, y: [shared] })).toBe('{"x":{"v":1},"y":[{"v":1}]}');
  });

  it('throws the depth error for 100,000 nested arrays without overflowing the stack', () => {
    let deep: unknown = [];
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expectThrowsCode(() => canonicalJson(deep), 'canonical_json.too_deep');
    let deepObj: unknown = {};
    for (let i = 0; i < 100_000; i++) deepObj = { d: deepObj };
    expectThrowsCode(() => canonicalJson(deepObj), 'canonical_json.too_deep');
  });

  it('accepts nesting right up to the documented limit', () => {
    let ok: unknown = 0;
    for (let i = 0; i < CANONICAL_JSON_MAX_DEPTH; i++) ok = [ok];
    expect(canonicalJson(ok)).toBe('['.repeat(CANONICAL_JSON_MAX_DEPTH) + '0' + ']'.repeat(CANONICAL_JSON_MAX_DEPTH));
    expectThrowsCode(() => canonicalJson([ok]), 'canonical_json.too_deep');
  });

  it('property: key insertion order never changes the output', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.integer(), (value, seed) => {
        expect(canonicalJson(reorderKeys(value, seed))).toBe(canonicalJson(value));
      }),
      // The example is a counterexample fast-check once found: a computed
      // "__proto__" key is an own key, and must stay one when reordered.
      { numRuns: 1000, examples: [[JSON.parse('{"__proto__":[]}') as fc.JsonValue, 0]] },
    );
  });

  it('property: canonical form is a fixed point of parse-then-canonicalize', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const once = canonicalJson(value);
        expect(canonicalJson(JSON.parse(once))).toBe(once);
      }),
      { numRuns: 1000 },
    );
  });

  it('property: output parses back to a value deep-equal to the input', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        // -0 is written as 0, exactly as JSON.stringify writes it.
        expect(JSON.parse(canonicalJson(value))).toEqual(JSON.parse(JSON.stringify(value)));
      }),
      { numRuns: 1000 },
    );
  });

  it('property: structurally different JSON values give different text', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
        const same = JSON.stringify(JSON.parse(canonicalJson(a))) === JSON.stringify(JSON.parse(canonicalJson(b)));
        expect(canonicalJson(a) === canonicalJson(b)).toBe(same);
      }),
      { numRuns: 1000 },
    );
  });
});
