/**
 * The narrow windows the checker finds, as paths the conformance walk can
 * take: the shortest path on which a model (a seeded-defect one, or the
 * protocol in a scenario with a known finding) breaks, as moves to make
 * again on the correct model and the real scripts.
 */
import type { Action } from '../../../protocol/model/actions.js';
import type { Scenario } from '../../../protocol/model/state.js';
import { packageScripts, type ScriptLibrary } from '../../../src/redis/scripts/scripts.js';
import type { RedisFixture } from '../../support/redis-fixture.js';
import type { OutcomeDatabase } from './database.js';
import { PATH_TICK_MS, RealSide } from './real-side.js';
import { explore } from '../../../protocol/checker/explore.js';
import { replay } from '../../../protocol/checker/trace.js';
import { SEEDED_DEFECTS, type SeededDefect } from '../../../protocol/model/defects.js';
import type { ModelContext } from '../../../protocol/model/hooks.js';
import { DEFECT_SCENARIOS } from '../../../protocol/scenarios.js';

/** The shortest path on which `ctx`'s model breaks an invariant; throws when the checker finds none within 30 moves. */
export function brokenPath(ctx: ModelContext): Action[] {
  const found = explore(ctx, { depth: 30 });
  if (found.violation === undefined) throw new Error(`the checker found no violation in ${ctx.scenario.name}`);
  return [...replay(ctx, found.violation.moves).actions];
}

/** The shortest path on which the model with seeded defect `name` breaks. */
export const defectPath = (name: SeededDefect): Action[] => brokenPath({ scenario: DEFECT_SCENARIOS[name], hooks: SEEDED_DEFECTS[name] });

/**
 * A maker of fresh real sides for walking a fixed path of `scenario`: the
 * file's redis-server (and PostgreSQL, when given), with the long ticks a
 * fixed path needs, and the package's scripts unless told others.
 */
export function pathSides(
  fixture: RedisFixture,
  database: OutcomeDatabase | undefined,
  scenario: Scenario,
  scripts: ScriptLibrary = packageScripts(),
): () => RealSide {
  return () =>
    new RealSide(fixture.connect(), scripts, fixture.handle().prefix, database?.url(), database?.observer(), scenario, PATH_TICK_MS);
}
