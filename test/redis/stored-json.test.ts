import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ReceiptValueNotSerializableError } from '../../src/redis/errors.js';
import { toStoredJson } from '../../src/redis/receipts/channel.js';

describe('toStoredJson', () => {
  it('property: JSON values, flat or nested, are written as JSON.stringify writes them', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(toStoredJson(value, 'v')).toBe(JSON.stringify(value));
      }),
    );
  });

  it('a flat object with a value JSON would alter still takes the careful path and is refused', () => {
    for (const bad of [{ n: NaN }, { n: -Infinity }, { f: () => 1 }, { m: new Map() }, { b: 1n }]) {
      expect(() => toStoredJson(bad, 'the result')).toThrow(ReceiptValueNotSerializableError);
    }
  });

  it('honours toJSON on a flat object and on a class instance', () => {
    expect(toStoredJson({ toJSON: () => 'x' }, 'v')).toBe('"x"');
    expect(toStoredJson(new Date(0), 'v')).toBe('"1970-01-01T00:00:00.000Z"');
  });
});
