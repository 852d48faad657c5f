/**
 * Retention of outcome rows on a real PostgreSQL: rows of attempts that
 * started longer ago than the retention go, in batches of the size asked,
 * fresh ones stay, and a row another session holds is skipped, not waited on.
 */
import { describe, expect, it } from 'vitest';
import { deleteExpiredOutcomes, runTransactional } from '../../src/transactional/index.js';
import { postgresSkipReason } from '../support/postgres.js';
import { freshKey, KIT_MAKERS, usePostgres } from './fixture.js';

describe.skipIf(postgresSkipReason() !== undefined)('deleteExpiredOutcomes', () => {
  const pgdb = usePostgres();
  const count = async () => Number((await pgdb.admin().query('SELECT count(*) AS n FROM tool_receipt_outcomes')).rows[0].n);

  it('deletes expired rows in bounded batches, keeps fresh ones, and skips a row another session holds', async () => {
    const kit = KIT_MAKERS.pg(pgdb.handle().url);
    try {
      const old: string[] = [];
      for (let i = 0; i < 7; i++) {
        const key = freshKey('old');
        old.push(key);
        expect((await runTransactional(kit.db, { receiptKey: key, epoch: 'e', attempt: 1 }, async () => i)).status).toBe('committed');
      }
      await pgdb
        .admin()
        .query("UPDATE tool_receipt_outcomes SET started_at = now() - interval '2 days' WHERE receipt_key = ANY($1)", [old]);
      for (let i = 0; i < 3; i++) await runTransactional(kit.db, { receiptKey: freshKey('fresh'), epoch: 'e', attempt: 1 }, async () => i);
      expect(await count()).toBe(10);
      // One expired row is held by another transaction: skipped, not waited on.
      const holder = await pgdb.admin().connect();
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT 1 FROM tool_receipt_outcomes WHERE receipt_key = $1 FOR UPDATE', [old[0]]);
        const first = await deleteExpiredOutcomes(kit.db, { olderThanMs: 86_400_000, batchSize: 2, maxBatches: 2 });
        expect(first).toEqual({ deleted: 4, batches: 2, more: true });
        const rest = await deleteExpiredOutcomes(kit.db, { olderThanMs: 86_400_000, batchSize: 2 });
        expect(rest).toEqual({ deleted: 2, batches: 2, more: false });
        await holder.query('COMMIT');
      } finally {
        holder.release();
      }
      expect(await count()).toBe(4);
      expect(await deleteExpiredOutcomes(kit.db, { olderThanMs: 86_400_000 })).toEqual({ deleted: 1, batches: 1, more: false });
      expect(await count()).toBe(3);
      await expect(deleteExpiredOutcomes(kit.db, { olderThanMs: 0 })).rejects.toMatchObject({ code: 'options.invalid' });
      await expect(deleteExpiredOutcomes(kit.db, {} as never)).rejects.toMatchObject({ code: 'options.invalid' });
    } finally {
      await kit.close();
    }
  });
});
