/**
 * holdLifetime on a real PostgreSQL, through each driver: a takeover ends
 * the open transaction of a stalled attempt before it reads the outcome row,
 * so that attempt can never commit after the decision; an attempt that
 * begins while a takeover decides rolls back at once; one whose `confirm`
 * rejects rolls back before its row; other lifetimes are left alone.
 */
import { describe, expect, it } from 'vitest';
import { runTransactional, type TransactionalRun } from '../../src/transactional/index.js';
import { holdLifetime, lifetimeLockKey } from '../../src/transactional/takeover.js';
import { postgresSkipReason } from '../support/postgres.js';
import { freshKey, gate, KIT_MAKERS, outcomeRows, ticketsOf, until, usePostgres, type AnyKit } from './fixture.js';

const EPOCH = 'AAAAAAAAAAAAAAAAhold';
const HOLD = { lockTimeoutMs: 5_000, idleInTransactionTimeoutMs: 60_000 };

const reasonOf = (run: TransactionalRun): string => (run.status === 'not_committed' ? run.error.reason : run.status);

describe.skipIf(postgresSkipReason() !== undefined)('holdLifetime', () => {
  const pgdb = usePostgres();
  const idleInTransaction = async () =>
    (await pgdb.admin().query("SELECT pid FROM pg_stat_activity WHERE state = 'idle in transaction'")).rows.map(
      (r: { pid: number }) => r.pid,
    );

  describe.each(Object.keys(KIT_MAKERS) as (keyof typeof KIT_MAKERS)[])('on %s', (driver) => {
    const withKit = async (body: (kit: AnyKit) => Promise<void>) => {
      const kit: AnyKit = KIT_MAKERS[driver](pgdb.handle().url);
      try {
        await body(kit);
      } finally {
        await kit.close();
      }
    };

    /** An attempt of `key` stopped after its write, its transaction open (as a SIGSTOPped worker leaves it). */
    const stalledAttempt = async (kit: AnyKit, key: string, epoch = EPOCH) => {
      const held = gate();
      const before = new Set(await idleInTransaction());
      const holds = gate();
      const run = runTransactional(kit.db, { receiptKey: key, epoch, attempt: 1 }, async (tx) => {
        await kit.insertTicket(tx, key, 1);
        holds.open();
        await held.wait;
        return 'by 1';
      });
      await holds.wait; // its row and its ticket are in: from here its session stays idle in its transaction
      let pid: number | undefined;
      await until(async () => (pid = (await idleInTransaction()).find((p) => !before.has(p))) !== undefined, 'the attempt to hold its row');
      return { run, pid: pid!, resume: held.open };
    };

    it('ends a stalled attempt’s open transaction before it reads, finds nothing committed, and that attempt can never commit', () =>
      withKit(async (kit) => {
        const key = freshKey('stalled');
        const stalled = await stalledAttempt(kit, key);
        const found = await holdLifetime(kit.db, key, EPOCH, async (f) => f, HOLD);
        expect(found.outcome).toBeUndefined();
        expect(found.ended).toEqual([{ pid: stalled.pid, xid: expect.stringMatching(/^\d+$/) }]);
        stalled.resume();
        expect((await stalled.run).status).toBe('not_committed');
        expect(await ticketsOf(pgdb.admin(), key)).toEqual([]);
        expect(await outcomeRows(pgdb.admin(), key)).toEqual([]);
      }));

    it('finds a committed row and ends nothing', () =>
      withKit(async (kit) => {
        const key = freshKey('committed');
        await runTransactional(kit.db, { receiptKey: key, epoch: EPOCH, attempt: 1 }, async (tx) => {
          await kit.insertTicket(tx, key, 1);
          return { ticket: 7 };
        });
        const found = await holdLifetime(kit.db, key, EPOCH, async (f) => f, HOLD);
        expect(found.ended).toEqual([]);
        expect(found.outcome).toMatchObject({ attempt: 1, result: { ticket: 7 } });
      }));

    it('makes an attempt that begins while it decides roll back at once, its tool never run', () =>
      withKit(async (kit) => {
        const key = freshKey('during');
        let ran = false;
        const during = await holdLifetime(
          kit.db,
          key,
          EPOCH,
          () =>
            runTransactional(kit.db, { receiptKey: key, epoch: EPOCH, attempt: 2 }, async () => {
              ran = true;
            }),
          HOLD,
        );
        expect(reasonOf(during)).toBe('taken_over');
        expect(ran).toBe(false);
        expect(await outcomeRows(pgdb.admin(), key)).toEqual([]);
        // Once the decision is made the lock is gone: the next attempt runs.
        const after = await runTransactional(kit.db, { receiptKey: key, epoch: EPOCH, attempt: 2 }, async (tx) =>
          kit.insertTicket(tx, key, 2),
        );
        expect(after.status).toBe('committed');
      }));

    it('leaves the open transactions of other lifetimes running', () =>
      withKit(async (kit) => {
        const other = freshKey('other');
        const stalled = await stalledAttempt(kit, other);
        const found = await holdLifetime(kit.db, freshKey('mine'), EPOCH, async (f) => f, HOLD);
        expect(found.ended).toEqual([]);
        // Nor another lifetime (epoch) of the same receipt key.
        expect((await holdLifetime(kit.db, other, 'AAAAAAAAAAAAAAAAother', async (f) => f, HOLD)).ended).toEqual([]);
        stalled.resume();
        expect(await stalled.run).toEqual({ status: 'committed', result: 'by 1', attempt: 1 });
      }));
  });

  it('rolls an attempt back before its row when confirm rejects, with that error as the cause', async () => {
    const kit = KIT_MAKERS.pg(pgdb.handle().url);
    try {
      const key = freshKey('unconfirmed');
      const fenced = new Error('fenced out');
      let ran = false;
      const run = await runTransactional(
        kit.db,
        {
          receiptKey: key,
          epoch: EPOCH,
          attempt: 3,
          confirm: async () => {
            throw fenced;
          },
        },
        async () => void (ran = true),
      );
      expect(run.status).toBe('not_committed');
      expect(run.status === 'not_committed' && run.error).toMatchObject({ reason: 'not_confirmed', cause: fenced });
      expect(ran).toBe(false);
      expect(await outcomeRows(pgdb.admin(), key)).toEqual([]);
    } finally {
      await kit.close();
    }
  });

  it('keys each lifetime by receipt key and epoch together', () => {
    expect(lifetimeLockKey('a', 'b')).toBe(lifetimeLockKey('a', 'b'));
    expect(lifetimeLockKey('a', 'b')).not.toBe(lifetimeLockKey('a', 'c'));
    expect(lifetimeLockKey('a\nb', '')).not.toBe(lifetimeLockKey('a', 'b\n'));
    expect(Number.isInteger(lifetimeLockKey('k', 'e')) && Math.abs(lifetimeLockKey('k', 'e')) <= 2 ** 31).toBe(true);
  });
});
