import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isWellFormedText } from '../../src/core/identity.js';

describe('isWellFormedText', () => {
  it('property: false exactly when the text holds a lone surrogate (any UTF-16 units, pairs included)', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary' }),
        fc.string({ unit: fc.integer({ min: 0xd800, max: 0xdfff }).map((u) => String.fromCharCode(u)) }),
        (text, surrogates) => {
          const mixed = text + surrogates;
          expect(isWellFormedText(mixed)).toBe(!/\p{Surrogate}/u.test(mixed));
        },
      ),
    );
  });
});
