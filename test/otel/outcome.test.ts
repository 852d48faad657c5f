import { describe, expect, it } from 'vitest';
import { outcomeOf, type SeenMilestones } from '../../src/otel/outcome.js';

const none: SeenMilestones = {
  decision: undefined,
  waited: false,
  fencedOut: false,
  aborted: false,
  outcomeUnknown: false,
  settled: undefined,
};
const thrown = { error: new Error('x') };

describe('outcomeOf', () => {
  it("takes the returned block's outcome over anything seen", () => {
    const block = { type: 'tool_result' as const, tool_use_id: 't', content: '', outcome: 'ambiguous' as const };
    expect(outcomeOf({ result: block }, { ...none, decision: 'ambiguous', settled: 'failed' })).toBe('ambiguous');
  });

  it('explains a thrown error by the first milestone that accounts for it', () => {
    expect(outcomeOf(thrown, { ...none, decision: 'wait', waited: true })).toBe('waited');
    expect(outcomeOf(thrown, { ...none, decision: 'execute', fencedOut: true, aborted: true })).toBe('fenced_out');
    expect(outcomeOf(thrown, { ...none, decision: 'execute', aborted: true })).toBe('aborted');
    expect(outcomeOf(thrown, { ...none, decision: 'execute', outcomeUnknown: true })).toBe('outcome_unknown');
    expect(outcomeOf(thrown, { ...none, decision: 'execute', settled: 'failed' })).toBe('failed');
    expect(outcomeOf(thrown, { ...none, decision: 'ambiguous' })).toBe('ambiguous');
    expect(outcomeOf(thrown, { ...none, decision: 'execute' })).toBe('error');
    expect(outcomeOf(thrown, none)).toBe('error');
  });
});
