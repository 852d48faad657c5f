/**
 * The Kysely adapter (`kysely` with its `PostgresDialect` over `pg`): the
 * tool receives Kysely's own `Transaction`. `kysely` is loaded on the first
 * transaction, not with this entry point, and the instance is typed by shape.
 */
import { shaped } from '../core/options.js';
import { transactionalDatabase, type Rows, type TransactionalDatabase, type TransactionalDriver } from './database.js';
import type { OutcomeTableOptions } from './table.js';

/** What the adapter uses of a `Kysely` instance; `Tx` is its `Transaction` type. */
export interface KyselyLike<Tx> {
  transaction(): {
    setIsolationLevel(isolationLevel: 'read committed' | 'repeatable read' | 'serializable'): {
      execute<T>(callback: (trx: Tx) => Promise<T>): Promise<T>;
    };
  };
  executeQuery(query: never): unknown;
}

type KyselyModule = typeof import('kysely');
let kysely: Promise<KyselyModule> | undefined;

/** Has Kysely run `text` with `$n` parameters (PostgresDialect passes them to pg as they are). */
async function execute(executor: unknown, text: string, params: readonly unknown[]): Promise<Rows> {
  const { CompiledQuery } = await (kysely ??= import('kysely'));
  const result = await (executor as { executeQuery(query: unknown): Promise<{ rows: unknown[] }> }).executeQuery(
    CompiledQuery.raw(text, [...params]),
  );
  return result.rows as Rows;
}

function kyselyDriver<Tx>(db: KyselyLike<Tx>): TransactionalDriver<Tx> {
  return {
    name: 'kysely',
    transaction: (isolation, body) =>
      db
        .transaction()
        .setIsolationLevel(isolation)
        .execute((trx) => body({ tx: trx, query: (text, params) => execute(trx, text, params) })),
    query: (text, params) => execute(db, text, params),
  };
}

/**
 * A transactional database over a `Kysely` instance with `PostgresDialect`:
 * each attempt runs in `db.transaction()`, and the tool receives its
 * `Transaction`. `options` names the outcome table.
 *
 * Kysely checks clients out of its `pg.Pool` without listening for their
 * `'error'` event, so a connection lost mid-transaction is an uncaught
 * exception unless the pool's clients listen (docs/transactional.md shows how).
 */
export function kyselyDatabase<Tx>(db: KyselyLike<Tx>, options: OutcomeTableOptions = {}): TransactionalDatabase<Tx> {
  shaped('a Kysely instance (with transaction() and executeQuery())', ['transaction', 'executeQuery']).check(db, {
    owner: 'kyselyDatabase',
    option: 'db',
  });
  return transactionalDatabase(kyselyDriver(db), options, 'kyselyDatabase');
}
