/**
 * Terminal formatting: alignment, compact durations, and escaping of values
 * read from Redis.
 */
import { describe, expect, it } from 'vitest';
import { clip, duration, fields, isoTime, table, terminalText, token } from '../../src/cli/format.js';

describe('token', () => {
  it('shows plain names bare and quotes anything with spaces or invisible characters', () => {
    expect(token('send_email')).toBe('send_email');
    expect(token('acme/eu-1')).toBe('acme/eu-1');
    expect(token('send email')).toBe('"send email"');
    expect(token('')).toBe('""');
    expect(token('a\nb')).toBe('"a\\nb"');
  });

  it('escapes terminal control sequences, C1 controls and bidi overrides', () => {
    expect(token('\u001b[31mred')).toBe('"\\u001b[31mred"');
    expect(token('x\u009by')).toBe('"x\\u009by"');
    expect(token('abc\u202Efed')).toBe('"abc\\u202efed"');
    for (const value of ['\u001b]0;title\u0007', '\u2028', 'a\u200Fb']) {
      expect(token(value)).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e]/);
    }
  });
});

describe('terminalText', () => {
  it('keeps newlines and escapes every other control character', () => {
    expect(terminalText('a\nb\u001b[2Jc\rd')).toBe('a\nb\\u001b[2Jc\\u000dd');
  });
});

describe('table', () => {
  it('aligns columns under the header and leaves the last column unpadded', () => {
    expect(
      table(
        ['A', 'LONGER'],
        [
          ['x', '1'],
          ['wide value', '2'],
        ],
      ),
    ).toEqual(['A           LONGER', 'x           1', 'wide value  2']);
  });
});

describe('fields', () => {
  it('aligns values and continues multi-line values under the value column', () => {
    expect(
      fields([
        ['a', 'one'],
        ['long label', 'two\nthree'],
      ]),
    ).toEqual(['a           one', 'long label  two', '            three']);
  });
});

describe('duration', () => {
  it.each([
    [0, '0ms'],
    [850, '850ms'],
    [12_345, '12.3s'],
    [252_000, '4m12s'],
    [3 * 3_600_000 + 4 * 60_000, '3h04m'],
    [2 * 86_400_000 + 3 * 3_600_000, '2d03h'],
    [-1500, '1.5s'],
  ])('%d ms is %s', (ms, text) => {
    expect(duration(ms)).toBe(text);
  });
});

describe('isoTime and clip', () => {
  it('writes UTC to the second', () => {
    expect(isoTime(Date.UTC(2025, 5, 1, 12, 0, 3, 456))).toBe('2025-06-01T12:00:03Z');
  });

  it('cuts with an ellipsis and never splits a surrogate pair', () => {
    expect(clip('abcdef', 6)).toBe('abcdef');
    expect(clip('abcdef', 4)).toBe('abc…');
    expect(clip('ab😀cd', 4)).toBe('ab…');
  });
});
