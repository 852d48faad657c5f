/**
 * A takeover whose own PostgreSQL session is ended while it holds the
 * lifetime's lock (its worker stalled past the idle-in-transaction timeout),
 * on a real redis-server and PostgreSQL: a stalled attempt of the lifetime
 * then confirms, commits, and lets its lease lapse again before the takeover
 * records "not started". The verdict carries when the reconcile began, so
 * reconcile-settle-3.lua refuses it (the attempt's lease was renewed after
 * that): the call stays running, for a later takeover to read the row.
 */
import { describe, expect, it } from 'vitest';
import { FencedOutError } from '../../src/redis/errors.js';
import { ReconcileStore } from '../../src/redis/receipts/transitions/reconcile-store.js';
import { runTransactional } from '../../src/transactional/index.js';
import { holdLifetime, LIFETIME_LOCK_SPACE, lifetimeLockKey } from '../../src/transactional/takeover.js';
import { postgresSkipReason } from '../support/postgres.js';
import { useRedis } from '../support/redis-fixture.js';
import { outcomeRows, pgKit, ticketsOf, usePostgres } from './fixture.js';

const LEASE_MS = 300;
const HOLD = { lockTimeoutMs: 5_000, idleInTransactionTimeoutMs: 60_000 };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(postgresSkipReason() !== undefined)('a takeover whose session PostgreSQL ended', () => {
  const pgdb = usePostgres();
  const redis = useRedis();

  it('cannot record "not started" after a stalled attempt confirmed and committed', async () => {
    const store = redis.store();
    const reconciles = new ReconcileStore({ redis: redis.client(), prefix: store.prefix });
    const kit = pgKit(pgdb.handle().url);
    try {
      const key = { tenantId: 'acme', runId: 'run-ended', toolName: 'open_ticket', argsHash: 'h1' };
      const claimed = await store.claim(key, { effect: 'transactional', leaseMs: LEASE_MS });
      const fence = claimed.fence!;
      await sleep(LEASE_MS + 50);
      const begun = await reconciles.begin(key, fence, 10_000, 'taker');
      if (begun.kind !== 'begun') throw new Error(`the reconcile did not begin: ${begun.kind}`);

      const lock = lifetimeLockKey(claimed.redisKey, fence.epoch);
      const verdict = holdLifetime(
        kit.db,
        claimed.redisKey,
        fence.epoch,
        async (found) => {
          expect(found.outcome).toBeUndefined();
          // The takeover's worker stalls here; PostgreSQL ends its idle session, and the lifetime's lock goes with it.
          const { rows } = await pgdb
            .admin()
            .query(
              "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND mode = 'ExclusiveLock' AND classid = $1::bigint::oid AND objid = ($2::bigint & 4294967295)::oid",
              [LIFETIME_LOCK_SPACE, lock],
            );
          await pgdb.admin().query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
          // The stalled attempt goes on: its confirm passes (no verdict yet), it inserts and commits.
          const stalled = await runTransactional(
            kit.db,
            {
              receiptKey: claimed.redisKey,
              epoch: fence.epoch,
              attempt: 1,
              confirm: async () => void (await store.heartbeat(key, fence, LEASE_MS)),
            },
            async (tx) => kit.insertTicket(tx, claimed.redisKey, 1),
          );
          expect(stalled.status).toBe('committed');
          // Its worker stalls before its complete: the lease lapses again, and the takeover resumes.
          await sleep(LEASE_MS + 50);
          return reconciles.settle(
            key,
            { ...fence, reconciles: begun.reconciles, worker: 'taker', begunMs: begun.nowMs },
            { verdict: 'not_started', leaseMs: LEASE_MS, note: 'settled from PostgreSQL: nothing committed' },
          );
        },
        HOLD,
      );
      // Refused: the attempt's lease was renewed after the reconcile began.
      await expect(verdict).rejects.toBeInstanceOf(FencedOutError);
      expect(await ticketsOf(pgdb.admin(), claimed.redisKey)).toEqual([1]);
      expect(await store.inspect(key)).toMatchObject({ status: 'running', attempts: 1 });

      // A later takeover (once this reconcile's lease lapses) reads the committed row: the call completes with it.
      expect(await outcomeRows(pgdb.admin(), claimed.redisKey)).toHaveLength(1);
    } finally {
      await kit.close();
    }
  }, 60_000);
});
