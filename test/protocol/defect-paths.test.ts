/**
 * The windows where each seeded defect breaks the model are where the real
 * scripts are most likely to be wrong, and random walks rarely reach them:
 * each such path (found by the checker on the broken model) is walked again
 * on the correct model, every move made on a real redis-server and
 * PostgreSQL and compared (test/protocol/conformance/).
 */
import { describe, expect, it } from 'vitest';
import { PROTOCOL_HOOKS } from '../../protocol/model/hooks.js';
import { SEEDED_DEFECTS, type SeededDefect } from '../../protocol/model/defects.js';
import { DEFECT_SCENARIOS } from '../../protocol/scenarios.js';
import { postgresSkipReason } from '../support/postgres.js';
import { useRedis } from '../support/redis-fixture.js';
import { useOutcomeDatabase } from './conformance/database.js';
import { defectPath, pathSides } from './conformance/paths.js';
import { walkFixedPath } from './conformance/walk.js';

const fixture = useRedis();
const database = useOutcomeDatabase();

/**
 * Paths the real scripts of main do not yet walk as the model (which has
 * the fixes of issue 41) does: why, and the divergence expected until the
 * fix lands. Such a test checks that this very divergence happens, and
 * fails once the fix has landed, to be taken off this list.
 */
const PENDING: Partial<Record<SeededDefect, { why: string; divergence: RegExp }>> = {};

describe('the seeded defects’ paths on the real scripts', () => {
  for (const name of Object.keys(SEEDED_DEFECTS) as SeededDefect[]) {
    const scenario = DEFECT_SCENARIOS[name];
    const needsPostgres = scenario.calls.some((c) => c.effect === 'transactional');
    const pending = PENDING[name];
    const walk = async () => {
      const path = defectPath(name);
      const { made } = await walkFixedPath(pathSides(fixture, database, scenario), { scenario, hooks: PROTOCOL_HOOKS }, path);
      // The correct model may leave the broken one's path early, but never before its first moves.
      expect(made).toBeGreaterThan(path.length / 2);
    };
    it.skipIf(needsPostgres && postgresSkipReason() !== undefined)(
      pending === undefined ? `walks the path that breaks "${name}" as the model does` : `"${name}": ${pending.why}`,
      async () => {
        if (pending === undefined) await walk();
        else await expect(walk()).rejects.toThrow(pending.divergence);
      },
      60_000,
    );
  }
});
