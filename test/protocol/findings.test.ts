/**
 * The checker's known findings (protocol/findings.ts) stay found, and the
 * real scripts and PostgreSQL reach them too: each finding's path, walked
 * move by move on a real redis-server and PostgreSQL, agrees with the
 * model all the way to the move that breaks the promise. When a finding is
 * fixed, its test here fails: take it off the list, and its exclusion out
 * of the default scenarios.
 */
import { describe, expect, it } from 'vitest';
import { explore } from '../../protocol/checker/explore.js';
import { replay } from '../../protocol/checker/trace.js';
import { KNOWN_FINDINGS } from '../../protocol/findings.js';
import { PROTOCOL_HOOKS } from '../../protocol/model/hooks.js';
import { postgresSkipReason } from '../support/postgres.js';
import { useRedis } from '../support/redis-fixture.js';
import { useOutcomeDatabase } from './conformance/database.js';
import { pathSides } from './conformance/paths.js';
import { walkFixedPath } from './conformance/walk.js';

const fixture = useRedis();
const database = useOutcomeDatabase();

describe('the known findings', () => {
  for (const finding of KNOWN_FINDINGS) {
    const ctx = { scenario: finding.scenario, hooks: PROTOCOL_HOOKS };
    const needsPostgres = finding.scenario.calls.some((c) => c.effect === 'transactional');
    it.skipIf(needsPostgres && postgresSkipReason() !== undefined)(
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
