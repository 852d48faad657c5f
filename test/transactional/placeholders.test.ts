/**
 * Splitting a `$n` statement into text and parameters (for Drizzle's `sql`):
 * numbering the parameters back in reproduces the statement, and each
 * placeholder gets the parameter it names.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { paramsByPlaceholder } from '../../src/transactional/placeholders.js';

/** SQL without `$`, and not starting with a digit (which would lengthen the placeholder before it: `$1` then `0` is `$10`, as in PostgreSQL). */
const sqlText = fc.string().map((s) => s.replace(/\$/g, '').replace(/^[0-9]/, 'x'));

describe('paramsByPlaceholder', () => {
  it('gives each $n the parameter it names, and renumbering the pieces gives the statement back', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(sqlText, fc.nat({ max: 11 })), { maxLength: 8 }), sqlText, (parts, tail) => {
        const params = Array.from({ length: 12 }, (_, i) => ({ i }));
        const text = parts.map(([sql, n]) => `${sql}$${n + 1}`).join('') + tail;
        const pieces = paramsByPlaceholder(text, params);
        expect(pieces.filter((p) => typeof p !== 'string').map((p) => (p as { value: { i: number } }).value.i)).toEqual(
          parts.map(([, n]) => n),
        );
        const rebuilt = pieces.map((p) => (typeof p === 'string' ? p : `$${(p.value as { i: number }).i + 1}`)).join('');
        expect(rebuilt).toBe(text);
      }),
    );
  });

  it('refuses a placeholder with no parameter', () => {
    expect(() => paramsByPlaceholder('SELECT $1, $2', [1])).toThrow(RangeError);
  });
});
