/**
 * runTransactional on a real PostgreSQL, through each driver: a tool's
 * writes and its outcome row commit together or not at all, and a receipt
 * lifetime commits one outcome whatever its attempts do: the crash points
 * of a transactional call (before the tool's first write, after its writes
 * before COMMIT, after COMMIT before the caller learns it, a zombie trying
 * to commit after its takeover committed, a zombie holding its transaction
 * open while the takeover starts), and attempts racing for real.
 */
import { describe, expect, it } from 'vitest';
import {
  InvalidTransactionalAttemptError,
  readOutcome,
  runTransactional,
  TransactionNotCommittedError,
  type TransactionalRun,
} from '../../src/transactional/index.js';
import { postgresSkipReason } from '../support/postgres.js';
import { freshKey, gate, KIT_MAKERS, outcomeRows, someoneWaitsOnALock, ticketsOf, until, usePostgres, type AnyKit } from './fixture.js';

const EPOCH = 'AAAAAAAAAAAAAAAAcheck';

function reasonOf(run: TransactionalRun): string {
  return run.status === 'not_committed' ? run.error.reason : run.status;
}

describe.skipIf(postgresSkipReason() !== undefined)('runTransactional', () => {
  const pgdb = usePostgres();
  const terminate = (pid: number) => pgdb.admin().query('SELECT pg_terminate_backend($1)', [pid]);

  describe.each(Object.keys(KIT_MAKERS) as (keyof typeof KIT_MAKERS)[])('on %s', (driver) => {
    const withKit = async (body: (kit: AnyKit) => Promise<void>) => {
      const kit: AnyKit = KIT_MAKERS[driver](pgdb.handle().url);
      try {
        await body(kit);
      } finally {
        await kit.close();
      }
    };

    it('commits the tool’s writes with the outcome row, and a later attempt replays the stored result without running the tool', () =>
      withKit(async (kit) => {
        const key = freshKey('commit');
        const first = await runTransactional(kit.db, { receiptKey: key, epoch: EPOCH, attempt: 1 }, async (tx) => {
          await kit.insertTicket(tx, key, 1);
          return { ticket: 'T-1', b: 1, a: [1, 'x'] };
        });
        expect(first).toEqual({ status: 'committed', result: { ticket: 'T-1', b: 1, a: [1, 'x'] }, attempt: 1 });
        expect(await ticketsOf(pgdb.admin(), key)).toEqual([1]);
        // The stored text is the text written: key order kept.
        expect(await outcomeRows(pgdb.admin(), key)).toEqual([{ epoch: EPOCH, attempt: 1, result: '{"ticket":"T-1","b":1,"a":[1,"x"]}' }]);
        let ran = false;
        const again = await runTransactional(kit.db, { receiptKey: key, epoch: EPOCH, attempt: 2 }, async () => {
          ran = true;
        });
        expect(ran).toBe(false);
        expect(again).toMatchObject({ status: 'replay', result: { ticket: 'T-1', b: 1, a: [1, 'x'] }, outcome: { attempt: 1 } });
        expect(await ticketsOf(pgdb.admin(), key)).toEqual([1]);
      }));

    it('runs the tool at read committed with the session’s own lock_timeout, and a bounded idle-in-transaction timeout', () =>
      withKit(async (kit) => {
        const seen: string[] = [];
        const run = await runTransactional(kit.db, { receiptKey: freshKey('settings'), epoch: EPOCH, attempt: 1 }, async (tx) => {
          for (const name of ['transaction_isolation', 'lock_timeout', 'idle_in_transaction_session_timeout'])
            seen.push(await kit.setting(tx, name));
        });
        expect(run.status).toBe('committed');
        expect(seen).toEqual(['read committed', '0', '1min']);
        seen.length = 0;
        await runTransactional(
          kit.db,
          { receiptKey: freshKey('settings'), epoch: EPOCH, attempt: 1 },
          async (tx) => void seen.push(await kit.setting(tx, 'transaction_isolation')),
          {
            isolation: 'serializable',
          },
        );
        expect(seen).toEqual(['serializable']);
      }));

    it('rolls back everything when the tool throws, and says so with the tool’s own error', () =>
      withKit(async (kit) => {
        const key = freshKey('throws');
        const boom = new Error('no such customer');
        const run = await runTransactional(kit.db, { receiptKey: key, epoch: EPOCH, attempt: 1 }, async (tx) => {
          await kit.insertTicket(tx, key, 1);
          throw boom;
        });
        expect(run.status).toBe('not_committed');
        const error = (run as { error: TransactionNotCommittedError }).error;
        expect(error).toBeInstanceOf(TransactionNotCommittedError);
        expect(error.code).toBe('transactional.not_committed');
        expect(error.reason).toBe('tool_failed');
        expect(error.cause).toBe(boom);
        expect(await ticketsOf(pgdb.admin(), key)).toEqual([]);
        expect(await outcomeRows(pgdb.admin(), key)).toEqual([]);
      }));

    it('refuses a result with no faithful JSON form before committing, and keeps undefined as no value', () =>
      withKit(async (kit) => {
        const key = freshKey('json');
        const bad = await runTransactional(kit.db, { receiptKey: key, epoch: EPOCH, attempt: 1 }, async (tx) => {
          await kit.insertTicket(tx, key, 1);
          return { n: 10n };
        });
        expect(reasonOf(bad)).toBe('result_not_serializable');
        expect(await ticketsOf(pgdb.admin(), key)).toEqual([]);
        const none = await runTransactional(kit.db, { receiptKey: key, epoch: EPOCH, attempt: 2 }, async (tx) =>
          kit.insertTicket(tx, key, 2),
        );
        expect(none).toEqual({ status: 'committed', result: undefined, attempt: 2 });
        expect(await readOutcome(kit.db, key, EPOCH)).toMatchObject({ attempt: 2, result: undefined });
        expect(await outcomeRows(pgdb.admin(), key)).toEqual([{ epoch: EPOCH, attempt: 2, result: null }]);
      }));

    it('crash before the tool’s first write: the connection dies, nothing is left, and the takeover commits once', () =>
      withKit(async (kit) => {
        const key = freshKey('before-write');
        const first = await runTransactional(kit.db, { receiptKey: key, epoch: EPOCH, attempt: 1 }, async (tx) => {
          await terminate(await kit.backendPid(tx));
          await kit.insertTicket(tx, key, 1);
        });
        expect(first.status).toBe('not_committed');
        expect(await outcomeRows(pgdb.admin(), key)).toEqual([]);
        const takeover = await runTransactional(kit.db, { receiptKey: key, epoch: EPOCH, attempt: 2 }, async (tx) =>
          kit.insertTicket(tx, key, 2),
        );
        expect(takeover.status).toBe('committed');
        expect(await ticketsOf(pgdb.admin(), key)).toEqual([2]);
      }));

    it('crash after the tool’s writes, before COMMIT: they roll back with the outcome row, and the takeover commits once', () =>
      withKit(async (kit) => {
        const key = freshKey('after-write');
        const first = await runTransactional(kit.db, { receiptKey: key, epoch: EPOCH, attempt: 1 }, async (tx) => {
          await kit.insertTicket(tx, key, 1);
          await terminate(await kit.backendPid(tx));
          return 'done';
        });
        expect(reasonOf(first)).toBe('database_error');
        expect(await ticketsOf(pgdb.admin(), key)).toEqual([]);
        expect(await outcomeRows(pgdb.admin(), key)).toEqual([]);
        const takeover = await runTransactional(kit.db, { receiptKey: key, epoch: EPOCH, attempt: 2 }, async (tx) =>
          kit.insertTicket(tx, key, 2),
        );
        expect(takeover.status).toBe('committed');
        expect(await ticketsOf(pgdb.admin(), key)).toEqual([2]);
      }));

    it('crash after COMMIT, before the caller learns it: the takeover reads the row and replays it without running the tool', () =>
      withKit(async (kit) => {
        const key = freshKey('after-commit');
        // The caller dies here: its answer is never used.
        await runTransactional(kit.db, { receiptKey: key, epoch: EPOCH, attempt: 1 }, async (tx) => {
          await kit.insertTicket(tx, key, 1);
          return 'T-1';
        });
        expect(await readOutcome(kit.db, key, EPOCH)).toMatchObject({ attempt: 1, result: 'T-1' });
        let ran = false;
        const takeover = await runTransactional(kit.db, { receiptKey: key, epoch: EPOCH, attempt: 2 }, async () => void (ran = true));
        expect(takeover).toMatchObject({ status: 'replay', result: 'T-1' });
        expect(ran).toBe(false);
        expect(await ticketsOf(pgdb.admin(), key)).toEqual([1]);
      }));

    it('a zombie that runs after its takeover committed replays the takeover’s result, and its tool never runs', () =>
      withKit(async (kit) => {
        const key = freshKey('late-zombie');
        const takeover = await runTransactional(kit.db, { receiptKey: key, epoch: EPOCH, attempt: 2 }, async (tx) => {
          await kit.insertTicket(tx, key, 2);
          return 'by 2';
        });
        expect(takeover.status).toBe('committed');
        let ran = false;
        const zombie = await runTransactional(kit.db, { receiptKey: key, epoch: EPOCH, attempt: 1 }, async () => void (ran = true));
        expect(zombie).toMatchObject({ status: 'replay', result: 'by 2', outcome: { attempt: 2 } });
        expect(ran).toBe(false);
        expect(await ticketsOf(pgdb.admin(), key)).toEqual([2]);
      }));

    it('a zombie stopped mid-transaction is ended by the server; the takeover commits, and the zombie’s later commit fails with its writes rolled back', () =>
      withKit(async (kit) => {
        const key = freshKey('stopped-zombie');
        const held = gate();
        const holds = gate();
        const zombie = runTransactional(
          kit.db,
          { receiptKey: key, epoch: EPOCH, attempt: 1 },
          async (tx) => {
            await kit.insertTicket(tx, key, 1);
            holds.open();
            await held.wait; // the process is stopped here, its transaction open
            return 'by 1';
          },
          { idleInTransactionTimeoutMs: 1_000 },
        );
        await holds.wait; // its row and its ticket are in, and nothing more runs in its transaction
        // While the zombie's transaction lives, the takeover's insert waits and gives up: not committed, never ambiguous.
        const early = await runTransactional(
          kit.db,
          { receiptKey: key, epoch: EPOCH, attempt: 2 },
          async (tx) => kit.insertTicket(tx, key, 2),
          { lockTimeoutMs: 100 },
        );
        expect(reasonOf(early)).toBe('contended');
        let takeover: TransactionalRun | undefined;
        await until(async () => {
          takeover = await runTransactional(
            kit.db,
            { receiptKey: key, epoch: EPOCH, attempt: 2 },
            async (tx) => {
              await kit.insertTicket(tx, key, 2);
              return 'by 2';
            },
            { lockTimeoutMs: 200 },
          );
          return takeover.status !== 'not_committed';
        }, 'the server to end the zombie’s transaction');
        expect(takeover).toEqual({ status: 'committed', result: 'by 2', attempt: 2 });
        held.open();
        const late = await zombie;
        expect(late.status).toBe('not_committed');
        expect(await ticketsOf(pgdb.admin(), key)).toEqual([2]);
        expect(await outcomeRows(pgdb.admin(), key)).toEqual([{ epoch: EPOCH, attempt: 2, result: '"by 2"' }]);
      }));

    it.each([
      ['commits', 'replay'],
      ['rolls back', 'committed'],
    ] as const)(
      'a zombie holding its transaction open while the takeover starts: the takeover waits, and when the zombie %s it ends %s',
      (zombieEnds, takeoverEnds) =>
        withKit(async (kit) => {
          const key = freshKey(`open-zombie-${takeoverEnds}`);
          const held = gate();
          const holds = gate();
          const zombie = runTransactional(kit.db, { receiptKey: key, epoch: EPOCH, attempt: 1 }, async (tx) => {
            await kit.insertTicket(tx, key, 1);
            holds.open();
            await held.wait;
            if (zombieEnds === 'rolls back') throw new Error('the zombie gives up');
            return 'by 1';
          });
          await holds.wait; // its row and its ticket are in, and nothing more runs in its transaction
          let takeoverRan = false;
          const takeover = runTransactional(
            kit.db,
            { receiptKey: key, epoch: EPOCH, attempt: 2 },
            async (tx) => {
              takeoverRan = true;
              await kit.insertTicket(tx, key, 2);
              return 'by 2';
            },
            { lockTimeoutMs: 30_000 },
          );
          await until(() => someoneWaitsOnALock(pgdb.admin()), 'the takeover to wait on the zombie’s row');
          expect(takeoverRan).toBe(false);
          held.open();
          const [z, t] = await Promise.all([zombie, takeover]);
          if (takeoverEnds === 'replay') {
            expect(z.status).toBe('committed');
            expect(t).toMatchObject({ status: 'replay', result: 'by 1', outcome: { attempt: 1 } });
            expect(takeoverRan).toBe(false);
            expect(await ticketsOf(pgdb.admin(), key)).toEqual([1]);
          } else {
            expect(reasonOf(z)).toBe('tool_failed');
            expect(t).toEqual({ status: 'committed', result: 'by 2', attempt: 2 });
            expect(await ticketsOf(pgdb.admin(), key)).toEqual([2]);
          }
        }),
    );

    it('lets at most one of many concurrent attempts of a lifetime commit, and every other one replays it (exactly one row per lifetime)', () =>
      withKit(async (kit) => {
        for (let round = 0; round < 8; round++) {
          const key = freshKey('race');
          const runs = await Promise.all(
            Array.from({ length: 6 }, (_, i) =>
              runTransactional(
                kit.db,
                { receiptKey: key, epoch: EPOCH, attempt: i + 1 },
                async (tx) => {
                  await kit.insertTicket(tx, key, i + 1);
                  await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 5)));
                  return `by ${i + 1}`;
                },
                { lockTimeoutMs: 30_000 },
              ),
            ),
          );
          const committed = runs.filter((r) => r.status === 'committed');
          expect(committed).toHaveLength(1);
          const winner = (committed[0] as { attempt: number }).attempt;
          for (const r of runs) if (r.status !== 'committed') expect(r).toMatchObject({ status: 'replay', result: `by ${winner}` });
          expect(await ticketsOf(pgdb.admin(), key)).toEqual([winner]);
        }
      }));
  });

  it('tells the connection lost under the tool’s own statement (database_error) from the tool’s own failure (tool_failed)', async () => {
    const kit = KIT_MAKERS.pg(pgdb.handle().url);
    try {
      const sleep = `SELECT pg_sleep(30) /* ${freshKey('cut')} */`;
      const cut = runTransactional(kit.db, { receiptKey: freshKey('cut'), epoch: EPOCH, attempt: 1 }, async (client) => {
        await (client as { query(text: string): Promise<unknown> }).query(sleep);
      });
      let pid: number | undefined;
      await until(async () => {
        const rows = (await pgdb.admin().query('SELECT pid FROM pg_stat_activity WHERE query = $1', [sleep])).rows as { pid: number }[];
        pid = rows[0]?.pid;
        return pid !== undefined;
      }, 'the tool’s statement to run');
      await terminate(pid!);
      const ended = await cut;
      expect(reasonOf(ended)).toBe('database_error');
      // A statement of the tool's that fails in SQL, and a tool that throws, are the tool's failures.
      const failedInSql = await runTransactional(kit.db, { receiptKey: freshKey('sql'), epoch: EPOCH, attempt: 1 }, async (client) => {
        await (client as { query(text: string): Promise<unknown> }).query('SELECT 1 / 0');
      });
      expect(reasonOf(failedInSql)).toBe('tool_failed');
      const threw = await runTransactional(kit.db, { receiptKey: freshKey('threw'), epoch: EPOCH, attempt: 1 }, async () => {
        throw new Error('the tool gave up');
      });
      expect(reasonOf(threw)).toBe('tool_failed');
    } finally {
      await kit.close();
    }
  });

  it('ends a row wait that a session statement_timeout cut short as contended, as lock_timeout would', async () => {
    const kit = KIT_MAKERS.pg(`${pgdb.handle().url}${pgdb.handle().url.includes('?') ? '&' : '?'}options=-c%20statement_timeout%3D500`);
    try {
      const key = freshKey('timeout');
      const held = gate();
      const holds = gate();
      const holder = runTransactional(kit.db, { receiptKey: key, epoch: EPOCH, attempt: 1 }, async () => {
        holds.open(); // the tool runs once its row is in: the waiter below can only wait on it
        await held.wait;
        return 'by 1';
      });
      await holds.wait;
      const waiter = await runTransactional(kit.db, { receiptKey: key, epoch: EPOCH, attempt: 2 }, async () => 'by 2', {
        lockTimeoutMs: 5_000,
      });
      expect(reasonOf(waiter)).toBe('contended');
      held.open();
      expect(await holder).toMatchObject({ status: 'committed', result: 'by 1' });
    } finally {
      await kit.close();
    }
  });

  it('refuses an attempt identity it cannot store, before touching the database', async () => {
    const kit = KIT_MAKERS.pg(pgdb.handle().url);
    try {
      let ran = false;
      const tool = async () => void (ran = true);
      for (const bad of [
        { receiptKey: '', epoch: EPOCH, attempt: 1 },
        { receiptKey: 'k'.repeat(2049), epoch: EPOCH, attempt: 1 },
        { receiptKey: 'k', epoch: '', attempt: 1 },
        { receiptKey: 'k', epoch: EPOCH, attempt: 0 },
        { receiptKey: 'k', epoch: EPOCH, attempt: 1.5 },
      ]) {
        await expect(runTransactional(kit.db, bad, tool)).rejects.toBeInstanceOf(InvalidTransactionalAttemptError);
      }
      await expect(
        runTransactional(kit.db, { receiptKey: 'k', epoch: EPOCH, attempt: 1 }, tool, { lockTimeoutMs: 0 }),
      ).rejects.toMatchObject({ code: 'options.invalid' });
      expect(ran).toBe(false);
    } finally {
      await kit.close();
    }
  });
});
