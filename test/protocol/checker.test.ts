/**
 * The protocol checker at the test suite's depths: every scenario explored
 * without a violation, and the checker's own promises (a replayed trace
 * reaches what the search found; the counts are of distinct states).
 * `npm run protocol-check` explores deeper (docs/testing.md).
 */
import { describe, expect, it } from 'vitest';
import { explore } from '../../protocol/checker/explore.js';
import { PROTOCOL_HOOKS } from '../../protocol/model/hooks.js';
import { SCENARIOS } from '../../protocol/scenarios.js';

describe('the protocol checker at the quick depths', () => {
  for (const { scenario, quickDepth } of SCENARIOS) {
    it(`finds no violation in the ${scenario.name} scenario`, () => {
      const result = explore({ scenario, hooks: PROTOCOL_HOOKS }, { depth: quickDepth });
      expect(result.violation?.message).toBeUndefined();
      expect(result.depth).toBe(quickDepth);
      // Fewer would mean a scenario lost most of its moves.
      expect(result.states).toBeGreaterThan(1_000);
      expect(result.transitions).toBeGreaterThan(result.states);
    });
  }

  it('counts each state once: a second search of the same scenario reaches the same number', () => {
    const { scenario } = SCENARIOS[2]!;
    const first = explore({ scenario, hooks: PROTOCOL_HOOKS }, { depth: 8 });
    const again = explore({ scenario, hooks: PROTOCOL_HOOKS }, { depth: 8 });
    expect(again.states).toBe(first.states);
    expect(again.transitions).toBe(first.transitions);
  });
});
