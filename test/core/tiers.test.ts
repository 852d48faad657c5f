import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  DestructiveRanError,
  failureFactsOf,
  failureTier,
  NeverStartedError,
  TIER_SUFFIX,
  type FailureTier,
} from '../../src/core/tiers.js';

describe('failureTier', () => {
  it('ranks destructive over neverStarted over idempotent over neutral', () => {
    expect(failureTier({ destructiveRan: true, neverStarted: true }, { idempotent: true })).toBe('destructive');
    expect(failureTier({ neverStarted: true }, { idempotent: true })).toBe('neverStarted');
    expect(failureTier({}, { idempotent: true })).toBe('idempotent');
    expect(failureTier({})).toBe('neutral');
  });

  it('property: the tier is a function of the three facts with the documented precedence', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.boolean(), fc.boolean(), (d, n, i) => {
        const expected: FailureTier = d ? 'destructive' : n ? 'neverStarted' : i ? 'idempotent' : 'neutral';
        expect(failureTier({ destructiveRan: d, neverStarted: n }, { idempotent: i })).toBe(expected);
      }),
      { numRuns: 1000 },
    );
  });

  it('gives every tier a distinct suffix for the model', () => {
    expect(new Set(Object.values(TIER_SUFFIX)).size).toBe(4);
  });

  it('reads facts off the typed errors', () => {
    expect(failureFactsOf(new NeverStartedError('no'))).toEqual({ destructiveRan: false, neverStarted: true });
    expect(failureFactsOf(new DestructiveRanError('half'))).toEqual({ destructiveRan: true, neverStarted: false });
    expect(failureFactsOf(new Error('x'))).toEqual({ destructiveRan: false, neverStarted: false });
    expect(new NeverStartedError('x').code).toBe('tool.never_started');
    expect(new DestructiveRanError('x').code).toBe('tool.destructive_ran');
    expect(new DestructiveRanError('x').name).toBe('DestructiveRanError');
  });
});
