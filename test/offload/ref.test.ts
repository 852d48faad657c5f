import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  assertSafeToolResultRef,
  buildToolResultRef,
  isSafeToolResultRef,
  MAX_MINTED_TOOL_RESULT_REF_CHARS,
  MAX_REF_SEGMENT_CHARS,
  mintedRefSessionSegment,
  REF_SEGMENT_SEPARATOR,
  toolResultContentSegment,
  toolResultRefSegment,
} from '../../src/offload/ref.js';
import { UnsafeToolResultRefError } from '../../src/offload/errors.js';

const RUNS = { numRuns: 1500 };

/** Characters that tend to break naive ref schemes. */
const tricky = fc.constantFrom(
  '_',
  '~',
  '/',
  ':',
  '.',
  '-',
  '%',
  '{',
  '}',
  ' ',
  '\\',
  '\u0000',
  '\n',
  '\u007f',
  '\ud800',
  '\udc00',
  '\ud83d\ude00',
  'a',
  'b',
  'Z',
  '0',
);
const trickyString = fc.oneof(
  { weight: 4, arbitrary: fc.array(tricky, { maxLength: 8 }).map((a) => a.join('')) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 100, maxLength: 300 }) },
  { weight: 1, arbitrary: fc.array(fc.constantFrom('a', '_', '-'), { minLength: 120, maxLength: 140 }).map((a) => a.join('')) },
);
const tuple = fc.tuple(trickyString, trickyString, fc.array(trickyString, { maxLength: 3 }));
const mint = ([s, c, extra]: [string, string, string[]]): string => buildToolResultRef(s, c, ...extra);
const key = (t: [string, string, string[]]): string => JSON.stringify([t[0], t[1], ...t[2]]);

describe('buildToolResultRef', () => {
  it('property: distinct (session, call, extra segments) never mint one ref', () => {
    fc.assert(
      fc.property(fc.uniqueArray(tuple, { minLength: 2, maxLength: 24, selector: key }), (tuples) => {
        const refs = tuples.map(mint);
        expect(new Set(refs).size).toBe(tuples.length);
      }),
      RUNS,
    );
  });

  it('property: moving characters between segments changes the ref', () => {
    fc.assert(
      fc.property(trickyString, trickyString, fc.nat(), (a, b, cut) => {
        const joined = a + b;
        const at = cut % (joined.length + 1);
        const left = joined.slice(0, at);
        const right = joined.slice(at);
        fc.pre(left !== a);
        expect(buildToolResultRef(a, b)).not.toBe(buildToolResultRef(left, right));
      }),
      RUNS,
    );
  });

  it('property: native-charset ids appear verbatim', () => {
    const native = fc.stringMatching(/^[A-Za-z0-9_-]{1,128}$/);
    fc.assert(
      fc.property(native, native, fc.array(native, { maxLength: 2 }), (s, c, extra) => {
        expect(buildToolResultRef(s, c, ...extra)).toBe(['tr_' + s, c, ...extra].join(REF_SEGMENT_SEPARATOR));
      }),
      RUNS,
    );
  });

  it('property: every minted ref is safe, bounded, and placed by its session segment', () => {
    fc.assert(
      fc.property(trickyString, trickyString, fc.array(trickyString, { maxLength: 2 }), (s, c, extra) => {
        const ref = buildToolResultRef(s, c, ...extra);
        expect(isSafeToolResultRef(ref)).toBe(true);
        expect(ref.length).toBeLessThanOrEqual(MAX_MINTED_TOOL_RESULT_REF_CHARS);
        expect(mintedRefSessionSegment(ref)).toBe(toolResultRefSegment(s));
      }),
      RUNS,
    );
  });

  it('folds out-of-charset, empty and over-long segments into the marked form', () => {
    expect(buildToolResultRef('sess_1', 'toolu_01ABC')).toBe('tr_sess_1~toolu_01ABC');
    expect(buildToolResultRef('team_blue', 'x')).not.toBe(buildToolResultRef('team', 'blue_x'));
    const folded = toolResultRefSegment('call:7/x');
    expect(folded).toMatch(/^\.call_7_x\.[0-9a-f]{64}$/);
    expect(toolResultRefSegment('')).toMatch(/^\.\.[0-9a-f]{64}$/);
    expect(toolResultRefSegment('a'.repeat(MAX_REF_SEGMENT_CHARS))).toBe('a'.repeat(MAX_REF_SEGMENT_CHARS));
    expect(toolResultRefSegment('a'.repeat(MAX_REF_SEGMENT_CHARS + 1))).toMatch(/^\.a{32}\.[0-9a-f]{64}$/);
    expect(toolResultRefSegment(folded)).not.toBe(folded);
    expect(() => buildToolResultRef('s', 7 as unknown as string)).toThrow(
      expect.objectContaining({ code: 'tool_result.invalid_ref_segment' }),
    );
  });

  it('unpaired surrogates that UTF-8 would merge still mint distinct refs', () => {
    const refs = ['a\ud800', 'a\udbff', 'a\ufffd', 'a\udc00'].map((s) => buildToolResultRef(s, 'c'));
    expect(new Set(refs).size).toBe(4);
  });
});

describe('mintedRefSessionSegment', () => {
  it('answers undefined for refs not shaped like minted ones', () => {
    for (const ref of ['plain', 'tr_nosep', 'tr_{x}~y', 'tr_a.b~c', 'xtr_a~b', 'tr_~x']) {
      expect(mintedRefSessionSegment(ref), ref).toBeUndefined();
    }
    expect(mintedRefSessionSegment('tr_abc~def~ghi')).toBe('abc');
  });
});

describe('toolResultContentSegment', () => {
  it('is 128 bits of hex, deterministic, and distinguishes texts', () => {
    const a = toolResultContentSegment('hello');
    expect(a).toMatch(/^[0-9a-f]{32}$/);
    expect(toolResultContentSegment('hello')).toBe(a);
    expect(toolResultContentSegment('hello ')).not.toBe(a);
    expect(toolResultContentSegment('\ud800')).not.toBe(toolResultContentSegment('\ufffd'));
  });
});

describe('assertSafeToolResultRef', () => {
  it('rejects unusable refs with a stable code and accepts the rest', () => {
    for (const ref of ['', '.', '..', 'a/b', 'a\\b', 'a\u0000', 'a\tb', '\u009f', 'x\ud800', 'x'.repeat(2049), 42]) {
      expect(() => assertSafeToolResultRef(ref)).toThrow(UnsafeToolResultRefError);
    }
    try {
      assertSafeToolResultRef('a/b');
    } catch (error) {
      expect((error as UnsafeToolResultRefError).code).toBe('tool_result.unsafe_ref');
    }
    for (const ref of ['a', '...', 'a.b', 'tr_x~y', 'with space', '\ud83d\ude00', 'x'.repeat(2048), '{tag}:%']) {
      expect(() => assertSafeToolResultRef(ref)).not.toThrow();
    }
  });
});
