/**
 * The checker's findings (protocol/findings.ts), on the model and on a real
 * redis-server and PostgreSQL. A known finding stays found, and its path,
 * walked move by move on the real scripts, agrees with the model all the
 * way to the move that breaks the promise (when it is fixed, its test here
 * fails: move it to the fixed ones). A fixed finding's scenario passes on
 * the model with the fix, while the model with the fix undone still breaks
 * there (so the scenario still reaches the window); and the broken path,
 * walked on the real scripts beside the fixed model, is refused where the
 * fix refuses it: the fixed model leaves the path before its end, agreeing
 * with the real scripts at every move up to there.
 */
import { describe, expect, it } from 'vitest';
import { explore } from '../../protocol/checker/explore.js';
import { describeMove, replay } from '../../protocol/checker/trace.js';
import { applyAction, enabledActions, type Action } from '../../protocol/model/actions.js';
import { encodeState } from '../../protocol/model/encoding.js';
import { checkState } from '../../protocol/model/invariants.js';
import type { ModelContext } from '../../protocol/model/hooks.js';
import { initialState } from '../../protocol/model/state.js';
import { FIXED_FINDINGS, KNOWN_FINDINGS } from '../../protocol/findings.js';
import { PROTOCOL_HOOKS } from '../../protocol/model/hooks.js';
import type { Scenario } from '../../protocol/model/state.js';
import { postgresSkipReason } from '../support/postgres.js';
import { useRedis } from '../support/redis-fixture.js';
import { useOutcomeDatabase } from './conformance/database.js';
import { brokenPath, pathSides } from './conformance/paths.js';
import { walkFixedPath } from './conformance/walk.js';

const fixture = useRedis();
const database = useOutcomeDatabase();

/**
 * The moves of `path` made on `ctx`'s model while it allows them: each in
 * words and with the state it leads to (its canonical bytes), and the first
 * violation on the way.
 */
function follow(ctx: ModelContext, path: readonly Action[]): { moves: string[]; violation: string | undefined } {
  let state = initialState(ctx.scenario);
  const moves: string[] = [];
  for (const wanted of path) {
    const action = enabledActions(state, ctx).find((a) => a.kind === wanted.kind && a.who === wanted.who && a.choice === wanted.choice);
    if (action === undefined) break;
    const words = describeMove(state, action);
    const applied = applyAction(state, ctx, action);
    state = applied.next;
    moves.push(`${words} => ${Buffer.from(encodeState(state).bytes).toString('hex')}`);
    const violation = applied.violation ?? checkState(state, ctx);
    if (violation !== undefined) return { moves, violation };
  }
  return { moves, violation: undefined };
}

const needsPostgres = (scenario: Scenario) =>
  scenario.calls.some((c) => c.effect === 'transactional') && postgresSkipReason() !== undefined;

// None stands now; a suite with no test fails, so it is made only when one does.
if (KNOWN_FINDINGS.length > 0)
  describe('the known findings', () => {
    for (const finding of KNOWN_FINDINGS) {
      const ctx = { scenario: finding.scenario, hooks: PROTOCOL_HOOKS };
      it.skipIf(needsPostgres(finding.scenario))(
        `"${finding.name}" is found, and the real system reaches it`,
        async () => {
          const found = explore(ctx, { depth: 30 });
          expect(found.violation?.message).toMatch(finding.violation);
          const trace = replay(ctx, found.violation!.moves);
          expect(trace.violation).toBe(found.violation!.message);
          expect((await walkFixedPath(pathSides(fixture, database, finding.scenario), ctx, trace.actions)).made).toBe(trace.actions.length);
        },
        120_000,
      );
    }
  });

describe('the fixed findings', () => {
  for (const finding of FIXED_FINDINGS) {
    const fixed = { scenario: finding.scenario, hooks: PROTOCOL_HOOKS };
    it(`"${finding.name}": the fix undone still breaks there, the fixed model does not`, () => {
      expect(explore({ scenario: finding.scenario, hooks: finding.undone }, { depth: 30 }).violation?.message).toMatch(finding.violation);
      expect(explore(fixed, { depth: 30 }).violation).toBeUndefined();
    });
    it.skipIf(needsPostgres(finding.scenario))(
      `"${finding.name}": the real scripts refuse its path where the fix does`,
      async () => {
        const undone = { scenario: finding.scenario, hooks: finding.undone };
        const path = brokenPath(undone);
        const broken = follow(undone, path);
        const kept = follow(fixed, path);
        expect(broken.violation).toMatch(finding.violation);
        // The fixed model moves elsewhere where the undone one breaks, and breaks nothing on the way.
        expect(kept.violation).toBeUndefined();
        const parted = kept.moves.findIndex((move, i) => move !== broken.moves[i]);
        expect(parted).toBeGreaterThan(path.length / 2);
        // The real system agrees with the fixed model at every move, past the one where the two models part.
        const { made } = await walkFixedPath(pathSides(fixture, database, finding.scenario), fixed, path);
        expect(made).toBeGreaterThan(parted);
      },
      120_000,
    );
  }
});
