/**
 * A COMMIT whose reply never comes back, through each driver, with the
 * connection cut by a proxy exactly at COMMIT: the runner learns from the
 * database, on another connection, whether the transaction committed, and
 * says `committed` or `not_committed` accordingly, never guessing; when the
 * server's side of the connection stays open the runner ends the
 * transaction itself, and when the database cannot be asked it says the
 * outcome is unknown, which the outcome row settles afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readOutcome, runTransactional, type TransactionalRun } from '../../src/transactional/index.js';
import { startPgProxy, type CommitCut, type PgProxy } from '../support/pg-proxy.js';
import { postgresSkipReason } from '../support/postgres.js';
import { freshKey, KIT_MAKERS, outcomeRows, ticketsOf, until, usePostgres, type AnyKit } from './fixture.js';

const EPOCH = 'BBBBBBBBBBBBBBBBchek';

describe.skipIf(postgresSkipReason() !== undefined)('a lost COMMIT reply', () => {
  const pgdb = usePostgres();
  let proxy: PgProxy;
  beforeAll(async () => {
    proxy = await startPgProxy(pgdb.handle().url);
  });
  afterAll(() => proxy?.close());

  describe.each(Object.keys(KIT_MAKERS) as (keyof typeof KIT_MAKERS)[])('on %s', (driver) => {
    const withKit = async (body: (kit: AnyKit) => Promise<void>) => {
      const kit: AnyKit = KIT_MAKERS[driver](proxy.url);
      try {
        await body(kit);
      } finally {
        await kit.close();
      }
    };

    const cutAtCommit = (kit: AnyKit, key: string, how: CommitCut) => {
      const cut = proxy.cutNextCommit(how);
      const run = runTransactional(kit.db, { receiptKey: key, epoch: EPOCH, attempt: 1 }, async (tx) => {
        await kit.insertTicket(tx, key, 1);
        return 'T-1';
      });
      return Promise.all([run, cut]).then(([r]) => r);
    };

    it('when the server took the COMMIT: committed, learned from the database', () =>
      withKit(async (kit) => {
        const key = freshKey('lost-reply');
        const run = await cutAtCommit(kit, key, 'deliver-then-cut');
        expect(run).toEqual({ status: 'committed', result: 'T-1', attempt: 1 });
        expect(await ticketsOf(pgdb.admin(), key)).toEqual([1]);
        expect(await outcomeRows(pgdb.admin(), key)).toEqual([{ epoch: EPOCH, attempt: 1, result: '"T-1"' }]);
      }));

    it('when the server never got it and saw the connection close: not committed, and nothing is there', () =>
      withKit(async (kit) => {
        const key = freshKey('lost-request');
        const run = await cutAtCommit(kit, key, 'drop-then-cut');
        expect(run.status === 'not_committed' && run.error.reason).toBe('commit_failed');
        expect(await ticketsOf(pgdb.admin(), key)).toEqual([]);
        expect(await outcomeRows(pgdb.admin(), key)).toEqual([]);
      }));

    it('when the server never got it and its side stays open: the runner ends the transaction, then reports not committed', () =>
      withKit(async (kit) => {
        const key = freshKey('hung');
        const run = await cutAtCommit(kit, key, 'drop-then-hang');
        expect(run.status === 'not_committed' && run.error.reason).toBe('commit_failed');
        expect(await ticketsOf(pgdb.admin(), key)).toEqual([]);
        // The row is free again: the takeover commits without waiting.
        const takeover = await runTransactional(
          kit.db,
          { receiptKey: key, epoch: EPOCH, attempt: 2 },
          async (tx) => kit.insertTicket(tx, key, 2),
          { lockTimeoutMs: 200 },
        );
        expect(takeover.status).toBe('committed');
        expect(await ticketsOf(pgdb.admin(), key)).toEqual([2]);
      }));
  });

  it('says the outcome is unknown when the database cannot be asked in time, and the row settles it afterwards', async () => {
    const own = await startPgProxy(pgdb.handle().url);
    const kit = KIT_MAKERS.pg(own.url);
    try {
      const key = freshKey('unknown');
      // The server takes the COMMIT, then the proxy refuses the connection the runner asks on; no time to retry.
      const cut = own.cutNextCommit('deliver-then-cut', { thenRefuse: true });
      const run: TransactionalRun = await runTransactional(
        kit.db,
        { receiptKey: key, epoch: EPOCH, attempt: 1 },
        async (tx) => {
          await kit.insertTicket(tx, key, 1);
          return 'T-1';
        },
        { settleTimeoutMs: 0 },
      );
      await cut;
      expect(run.status).toBe('outcome_unknown');
      expect(run.status === 'outcome_unknown' && run.error.code).toBe('transactional.outcome_unknown');
      const direct = KIT_MAKERS.pg(pgdb.handle().url);
      try {
        await until(async () => (await outcomeRows(pgdb.admin(), key)).length === 1, 'the COMMIT to land');
        expect(await readOutcome(direct.db, key, EPOCH)).toMatchObject({ attempt: 1, result: 'T-1' });
      } finally {
        await direct.close();
      }
    } finally {
      await kit.close();
      await own.close();
    }
  });
});
