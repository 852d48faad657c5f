/**
 * The checker must find each seeded defect (protocol/model/defects.ts): run
 * on the model with that one defect, it reports a violation, reached by a
 * trace of at most 30 steps that replays to the same violation. A checker
 * that passed a broken model would be checking nothing.
 */
import { describe, expect, it } from 'vitest';
import { explore } from '../../protocol/checker/explore.js';
import { formatTrace, replay } from '../../protocol/checker/trace.js';
import { SEEDED_DEFECTS, type SeededDefect } from '../../protocol/model/defects.js';
import { DEFECT_SCENARIOS } from '../../protocol/scenarios.js';

/** What the violation each defect leads to says. */
const EXPECTED: Record<SeededDefect, RegExp> = {
  'the epoch checked before the status in an approval decision': /late decision .* refused as stale_lifetime, not refused as not pending/,
  'a takeover that decides while a stalled transaction can still commit':
    /committed after a takeover had decided|told nothing ran while its outcome row/,
  'a limit reservation that a redelivery cannot recognise': /refused by the limit although only its own reservation filled it/,
  'a complete that does not check the epoch': /fenced-out writer .* changed/,
  'a reclaim that does not flag an opaque receipt ambiguous': /opaque effect ran 2 times/,
};

describe('seeded defects', () => {
  for (const [name, hooks] of Object.entries(SEEDED_DEFECTS) as [SeededDefect, (typeof SEEDED_DEFECTS)[SeededDefect]][]) {
    it(`finds "${name}" with a trace of at most 30 steps`, () => {
      const ctx = { scenario: DEFECT_SCENARIOS[name], hooks };
      const result = explore(ctx, { depth: 30 });
      expect(result.violation?.message).toMatch(EXPECTED[name]);
      const trace = replay(ctx, result.violation!.moves);
      expect(trace.steps.length).toBeLessThanOrEqual(30);
      expect(trace.steps.length).toBe(result.violation!.moves.length);
      // The replay, which runs the moves on the state as it really grows, reaches the same violation.
      expect(trace.violation).toBe(result.violation!.message);
      expect(formatTrace(trace)).toContain(`=> ${result.violation!.message}`);
    });
  }
});
