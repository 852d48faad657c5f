/**
 * The model kept honest: random paths through the protocol model of each
 * scenario (protocol/scenarios.ts), every move made both in the model and
 * on a real redis-server (the lua/ scripts) and a real PostgreSQL (the
 * outcome table and its lifetime locks), the two compared after every move
 * (test/protocol/conformance/). A divergence fails the test with the path
 * that reached it. FC_SEED reproduces a run, FC_RUNS runs more paths.
 */
import fc from 'fast-check';
import { afterAll, describe, it } from 'vitest';
import { PROTOCOL_HOOKS } from '../../protocol/model/hooks.js';
import { SCENARIOS } from '../../protocol/scenarios.js';
import { packageScripts } from '../../src/redis/scripts/scripts.js';
import { postgresSkipReason } from '../support/postgres.js';
import { useRedis } from '../support/redis-fixture.js';
import { useOutcomeDatabase } from './conformance/database.js';
import { RealSide } from './conformance/real-side.js';
import { covered, FellBehind, walk } from './conformance/walk.js';

const fixture = useRedis();
const database = useOutcomeDatabase();
const NUM_RUNS = Number(process.env.FC_RUNS ?? 3);
const POSTGRES_SKIP = postgresSkipReason();

describe('the protocol model against the real scripts and PostgreSQL', () => {
  afterAll(() => {
    if (process.env.PROTOCOL_COVERAGE)
      console.log(
        [...covered]
          .sort()
          .map(([kind, n]) => `${kind}: ${n}`)
          .join('\n'),
      );
  });

  for (const { scenario } of SCENARIOS) {
    const needsPostgres = scenario.calls.some((c) => c.effect === 'transactional');
    it.skipIf(needsPostgres && POSTGRES_SKIP !== undefined)(
      `walks the ${scenario.name} scenario: every move agrees`,
      async () => {
        const seed = Number(process.env.FC_SEED ?? Math.floor(Math.random() * 2 ** 31));
        const redis = fixture.connect();
        const ctx = { scenario, hooks: PROTOCOL_HOOKS };
        try {
          await fc.assert(
            fc.asyncProperty(fc.array(fc.nat(), { minLength: 40, maxLength: 60 }), async (picks) => {
              const side = new RealSide(redis, packageScripts(), fixture.handle().prefix, database.url(), database.observer(), scenario);
              const log: string[] = [];
              try {
                await walk(side, ctx, picks, log);
              } catch (error) {
                // A machine too busy to keep the walk inside its ticks gives no verdict: this path is skipped, not failed.
                if (error instanceof FellBehind) return fc.pre(false);
                throw new Error(`${(error as Error).message}\nthe moves that led there:\n  ${log.join('\n  ')}`, { cause: error });
              } finally {
                await side.closeAll();
              }
            }),
            { numRuns: NUM_RUNS, seed, endOnFailure: true },
          );
        } catch (error) {
          throw new Error(`the ${scenario.name} walk diverged; reproduce with FC_SEED=${seed}\n${(error as Error).message}`, {
            cause: error,
          });
        }
      },
      300_000,
    );
  }
});
