/**
 * PostgreSQL killed mid-transaction (`pg_ctl stop -m immediate`: no
 * checkpoint, every open transaction cut off) and started again, which runs
 * crash recovery: the attempt caught in the middle left no half-written
 * outcome (no row, none of its writes), it ended as certainly not
 * committed, and the takeover after the restart commits once.
 */
import { describe, expect, it } from 'vitest';
import { readOutcome, runTransactional } from '../../src/transactional/index.js';
import { postgresSkipReason } from '../support/postgres.js';
import { freshKey, gate, KIT_MAKERS, outcomeRows, ticketsOf, until, usePostgres, type AnyKit } from './fixture.js';

describe.skipIf(postgresSkipReason() !== undefined)('a PostgreSQL crash mid-transaction', () => {
  const pgdb = usePostgres();

  it.each(Object.keys(KIT_MAKERS) as (keyof typeof KIT_MAKERS)[])(
    'leaves no half-written outcome on %s, and the takeover after restart commits once',
    async (driver) => {
      const kit: AnyKit = KIT_MAKERS[driver](pgdb.handle().url);
      try {
        const key = freshKey('crash');
        const wrote = gate();
        const held = gate();
        const attempt = runTransactional(kit.db, { receiptKey: key, epoch: 'e', attempt: 1 }, async (tx) => {
          await kit.insertTicket(tx, key, 1);
          wrote.open();
          await held.wait;
          return 'by 1';
        });
        await wrote.wait;
        await pgdb.handle().crashAndRestart();
        held.open();
        const run = await attempt;
        expect(run.status).toBe('not_committed');
        await until(
          async () =>
            await pgdb
              .admin()
              .query('SELECT 1')
              .then(
                () => true,
                () => false,
              ),
          'the admin pool to reconnect',
        );
        expect(await ticketsOf(pgdb.admin(), key)).toEqual([]);
        expect(await outcomeRows(pgdb.admin(), key)).toEqual([]);
        expect(await readOutcome(kit.db, key, 'e')).toBeUndefined();
        const takeover = await runTransactional(kit.db, { receiptKey: key, epoch: 'e', attempt: 2 }, async (tx) => {
          await kit.insertTicket(tx, key, 2);
          return 'by 2';
        });
        expect(takeover).toEqual({ status: 'committed', result: 'by 2', attempt: 2 });
        expect(await ticketsOf(pgdb.admin(), key)).toEqual([2]);
      } finally {
        await kit.close();
      }
    },
  );
});
