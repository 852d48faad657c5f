import { describe, expect, it } from 'vitest';
import { deepEqual } from '../../src/core/deep-equal.js';

describe('deepEqual', () => {
  it('compares plain objects regardless of key order', () => {
    expect(deepEqual({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 })).toBe(true);
    expect(deepEqual({ a: 1 }, { a: 2 })).toBe(false);
    expect(deepEqual({ a: 1 }, { a: 1, b: 2 })).toBe(false);
  });

  it('treats undefined-valued keys as absent, like JSON', () => {
    expect(deepEqual({ a: 1, b: undefined }, { a: 1 })).toBe(true);
  });

  it('distinguishes arrays from objects and order within arrays', () => {
    expect(deepEqual([1, 2], [2, 1])).toBe(false);
    expect(deepEqual([], {})).toBe(false);
    expect(deepEqual(null, {})).toBe(false);
    expect(deepEqual(0, -0)).toBe(false);
    expect(deepEqual(Number.NaN, Number.NaN)).toBe(true);
  });

  it('compares non-plain objects by identity', () => {
    const date = new Date(0);
    expect(deepEqual(date, date)).toBe(true);
    expect(deepEqual(new Date(0), new Date(0))).toBe(false);
  });

  it('answers false instead of overflowing on cycles', () => {
    const a: Record<string, unknown> = {};
    a.self = a;
    const b: Record<string, unknown> = {};
    b.self = b;
    expect(deepEqual(a, b)).toBe(false);
  });
});
