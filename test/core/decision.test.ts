import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { decideToolCallReceipt, effectForClaim, type EffectResumability, type ReceiptState } from '../../src/core/decision.js';

const effects: EffectResumability[] = ['resumable', 'opaque'];

describe('decideToolCallReceipt', () => {
  // Every state kind crossed with every effect; the expectation is written out per row.
  const table: Array<[string, ReceiptState, EffectResumability, string, number | undefined]> = [
    ['absent', { kind: 'absent' }, 'resumable', 'execute', 1],
    ['absent', { kind: 'absent' }, 'opaque', 'execute', 1],
    ['completed', { kind: 'completed' }, 'resumable', 'replay', undefined],
    ['completed', { kind: 'completed' }, 'opaque', 'replay', undefined],
    ['failed after 1', { kind: 'failed', attempts: 1 }, 'resumable', 'execute', 2],
    ['failed after 3', { kind: 'failed', attempts: 3 }, 'opaque', 'execute', 4],
    ['running, live', { kind: 'running', attempts: 1, leaseExpired: false, reportedAmbiguous: false }, 'resumable', 'wait', undefined],
    ['running, live', { kind: 'running', attempts: 2, leaseExpired: false, reportedAmbiguous: false }, 'opaque', 'wait', undefined],
    ['running, expired', { kind: 'running', attempts: 1, leaseExpired: true, reportedAmbiguous: false }, 'resumable', 'execute', 2],
    ['running, expired', { kind: 'running', attempts: 4, leaseExpired: true, reportedAmbiguous: false }, 'opaque', 'ambiguous', undefined],
    // A verdict once given sticks, whatever the lease or the effect asked for.
    [
      'reported, expired',
      { kind: 'running', attempts: 1, leaseExpired: true, reportedAmbiguous: true },
      'resumable',
      'ambiguous',
      undefined,
    ],
    ['reported, expired', { kind: 'running', attempts: 2, leaseExpired: true, reportedAmbiguous: true }, 'opaque', 'ambiguous', undefined],
    [
      'reported, live again',
      { kind: 'running', attempts: 1, leaseExpired: false, reportedAmbiguous: true },
      'resumable',
      'ambiguous',
      undefined,
    ],
    [
      'reported, live again',
      { kind: 'running', attempts: 1, leaseExpired: false, reportedAmbiguous: true },
      'opaque',
      'ambiguous',
      undefined,
    ],
  ];

  it.each(table)('%s × %s', (_label, state, effect, kind, attempt) => {
    const d = decideToolCallReceipt({ state, effect });
    expect(d.kind).toBe(kind);
    if (d.kind === 'execute') expect(d.attempt).toBe(attempt);
    if (d.kind === 'wait' || d.kind === 'ambiguous') expect(d.reason.length).toBeGreaterThan(10);
  });

  it('covers every state × effect combination', () => {
    const combos = new Set(
      table.map(([, s, e]) => `${s.kind}/${'leaseExpired' in s ? `${s.leaseExpired}/${s.reportedAmbiguous}` : '-'}/${e}`),
    );
    expect(combos.size).toBe(14);
  });

  const stateArb: fc.Arbitrary<ReceiptState> = fc.oneof(
    fc.constant({ kind: 'absent' as const }),
    fc.constant({ kind: 'completed' as const }),
    fc.record({ kind: fc.constant('failed' as const), attempts: fc.integer({ min: 1, max: 1e6 }) }),
    fc.record({
      kind: fc.constant('running' as const),
      attempts: fc.integer({ min: 1, max: 1e6 }),
      leaseExpired: fc.boolean(),
      reportedAmbiguous: fc.boolean(),
    }),
  );

  it('property: total, deterministic, and never executes a live, opaque-expired or reported-ambiguous attempt', () => {
    fc.assert(
      fc.property(stateArb, fc.constantFrom(...effects), (state, effect) => {
        const d = decideToolCallReceipt({ state, effect });
        expect(decideToolCallReceipt({ state, effect })).toEqual(d);
        if (d.kind === 'execute') {
          const prior = state.kind === 'absent' ? 0 : 'attempts' in state ? state.attempts : NaN;
          expect(d.attempt).toBe(prior + 1);
          expect(state.kind === 'running' && (!state.leaseExpired || effect === 'opaque' || state.reportedAmbiguous)).toBe(false);
        }
        if (state.kind === 'running' && state.reportedAmbiguous) expect(d.kind).toBe('ambiguous');
      }),
      { numRuns: 1000 },
    );
  });

  it('effectForClaim: the more conservative of the recorded and the requested effect; an unreadable record counts as opaque', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<EffectResumability | null>('resumable', 'opaque', null),
        fc.constantFrom(...effects),
        (recorded, requested) => {
          const effect = effectForClaim(recorded, requested, true);
          expect(effect === 'resumable').toBe(recorded === 'resumable' && requested === 'resumable');
          // Symmetric in the two sides whenever both are known.
          if (recorded !== null) expect(effectForClaim(requested, recorded, true)).toBe(effect);
        },
      ),
    );
    expect(effectForClaim(null, 'resumable', false)).toBe('resumable');
  });
});
