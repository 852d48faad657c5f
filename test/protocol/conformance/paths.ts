/**
 * The narrow windows the checker finds, as paths the conformance walk can
 * take: the path on which a seeded-defect model breaks (the shortest the
 * checker finds), as moves to make again on the correct model and the real
 * scripts.
 */
import type { Action } from '../../../protocol/model/actions.js';
import { explore } from '../../../protocol/checker/explore.js';
import { replay } from '../../../protocol/checker/trace.js';
import { SEEDED_DEFECTS, type SeededDefect } from '../../../protocol/model/defects.js';
import { DEFECT_SCENARIOS } from '../../../protocol/scenarios.js';

/** The shortest path on which the model with seeded defect `name` breaks; throws when the checker finds none. */
export function defectPath(name: SeededDefect): Action[] {
  const ctx = { scenario: DEFECT_SCENARIOS[name], hooks: SEEDED_DEFECTS[name] };
  const found = explore(ctx, { depth: 30 });
  if (found.violation === undefined) throw new Error(`the checker found no path that breaks "${name}"`);
  return [...replay(ctx, found.violation.moves).actions];
}
