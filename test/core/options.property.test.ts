/**
 * The pieces of the option checks: the edit distance behind "did you mean"
 * (a metric, with single edits at distance one), the suggestion it drives,
 * and the rules' sentences.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkOptions,
  closestName,
  editDistance,
  InvalidOptionsError,
  required,
  stringList,
  wholeNumber,
  nonBlankString,
  type OptionsSchema,
} from '../../src/core/options.js';

const word = fc.string({ maxLength: 12 });

describe('editDistance', () => {
  it('is a metric: zero exactly on equal strings, symmetric, and the triangle inequality holds', () => {
    fc.assert(
      fc.property(word, word, word, (a, b, c) => {
        expect(editDistance(a, b) === 0).toBe(a === b);
        expect(editDistance(a, b)).toBe(editDistance(b, a));
        expect(editDistance(a, c)).toBeLessThanOrEqual(editDistance(a, b) + editDistance(b, c));
      }),
    );
  });

  it('lies between the difference of the lengths and the longer length', () => {
    fc.assert(
      fc.property(word, word, (a, b) => {
        const d = editDistance(a, b);
        expect(d).toBeGreaterThanOrEqual(Math.abs(a.length - b.length));
        expect(d).toBeLessThanOrEqual(Math.max(a.length, b.length));
      }),
    );
  });

  it('is one for a single insertion, deletion or substitution, and adds up over a prefix', () => {
    fc.assert(
      fc.property(word, fc.nat(), fc.string({ minLength: 1, maxLength: 1 }), word, (a, at, ch, prefix) => {
        const i = a.length === 0 ? 0 : at % (a.length + 1);
        const inserted = a.slice(0, i) + ch + a.slice(i);
        expect(editDistance(a, inserted)).toBe(1);
        if (a.length > 0) {
          const j = at % a.length;
          expect(editDistance(a, a.slice(0, j) + a.slice(j + 1))).toBe(1);
          const substituted = a.slice(0, j) + ch + a.slice(j + 1);
          expect(editDistance(a, substituted)).toBe(substituted === a ? 0 : 1);
        }
        expect(editDistance(prefix + a, prefix + inserted)).toBe(1);
      }),
    );
  });

  it('counts known pairs', () => {
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('maxWait', 'maxWaitMs')).toBe(2);
  });
});

describe('closestName', () => {
  const known = ['redis', 'tools', 'prefix', 'leaseMs', 'maxWaitMs', 'waitJitterMs', 'destructiveTools', 'onAmbiguous'];

  it('suggests the option a typo came from', () => {
    expect(closestName('maxWait', known)).toBe('maxWaitMs');
    expect(closestName('maxwaitms', known)).toBe('maxWaitMs');
    expect(closestName('leaseMS', known)).toBe('leaseMs');
    expect(closestName('lease', known)).toBe('leaseMs');
    expect(closestName('destructive', known)).toBe('destructiveTools');
    expect(closestName('onAmbigous', known)).toBe('onAmbiguous');
    expect(closestName('tool', known)).toBe('tools');
  });

  it('suggests nothing for a name far from every option', () => {
    expect(closestName('concurrency', known)).toBeUndefined();
    expect(closestName('x', [])).toBeUndefined();
  });

  it('only ever answers a known name, and finds any known name again after one edit', () => {
    fc.assert(
      fc.property(fc.constantFrom(...known), fc.nat(), fc.constantFrom('x', 'Q', '_'), fc.string(), (name, at, ch, typed) => {
        const suggestion = closestName(typed, known);
        if (suggestion !== undefined) expect(known).toContain(suggestion);
        const i = at % (name.length + 1);
        const typo = name.slice(0, i) + ch + name.slice(i);
        expect(closestName(typo, known)).toBe(name);
        expect(closestName(name, known)).toBe(name);
      }),
    );
  });
});

describe('checkOptions', () => {
  interface Demo {
    size: number;
    label?: string;
    names?: readonly string[];
    inner?: { depth: number; note?: string };
  }
  const innerSchema: OptionsSchema<{ depth: number; note?: string }> = { depth: required(wholeNumber(0)), note: nonBlankString };
  const schema: OptionsSchema<Demo> = {
    size: required(wholeNumber(1, 'ms')),
    label: nonBlankString,
    names: stringList,
    // An options object inside the options, checked by its own schema as `durability` is.
    inner: { check: (value, site) => void checkOptions(site.owner, value, innerSchema, site.option) },
  };
  const refusal = (options: unknown): InvalidOptionsError => {
    try {
      checkOptions('demo', options, schema);
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidOptionsError);
      return error as InvalidOptionsError;
    }
    throw new Error('expected a refusal');
  };

  it.each([
    [{ size: Number.NaN }, 'size', 'demo: `size` must be a whole number of ms, at least 1; got NaN'],
    [{ size: -1000 }, 'size', 'got -1000'],
    [{ size: Number.POSITIVE_INFINITY }, 'size', 'got Infinity'],
    [{ size: 1.5 }, 'size', 'got 1.5'],
    [{ size: '5' }, 'size', 'got "5"'],
    [{}, 'size', '`size` must be a whole number of ms, at least 1; got undefined'],
    [{ size: 1, label: '  ' }, 'label', '`label` must be a non-empty string; got "  "'],
    [{ size: 1, names: 'Bash' }, 'names', '`names` must be an array of non-empty strings; got "Bash"'],
    [{ size: 1, names: ['ok', ''] }, 'names[1]', '`names[1]` must be a non-empty string; got an empty string'],
    [{ size: 1, inner: { depth: -1 } }, 'inner.depth', '`inner.depth` must be a whole number, 0 or more; got -1'],
    [{ size: 1, inner: { depth: 0, nte: 'x' } }, 'inner.nte', 'unknown option `inner.nte`; did you mean `note`?'],
    [{ size: 1, inner: 'deep' }, 'inner', '`inner` must be an object with `depth`, `note`; got a string'],
    [{ size: 1, sise: 2 }, 'sise', 'unknown option `sise`; did you mean `size`?'],
    [{ size: 1, colour: 'red' }, 'colour', 'unknown option `colour`; the options are `size`, `label`, `names`, `inner`'],
    [null, undefined, 'demo: the options must be an object'],
  ])('refuses %j naming %s', (options, option, said) => {
    const error = refusal(options);
    expect(error.code).toBe('options.invalid');
    expect(error.owner).toBe('demo');
    expect(error.option).toBe(option);
    expect(error.message).toContain(said);
  });

  it('takes what the rules accept, and an unknown key left undefined', () => {
    const options = { size: 3, label: 'x', names: ['a'], inner: { depth: 0 }, extra: undefined };
    expect(checkOptions('demo', options, schema)).toBe(options);
  });
});
