/**
 * The Drizzle adapter (`drizzle-orm/node-postgres`): the tool receives
 * Drizzle's own `tx`, so it writes with the same schema and query builder as
 * the rest of the app. `drizzle-orm` is loaded on the first transaction, not
 * with this entry point, and the database is typed by shape.
 */
import { shaped } from '../core/options.js';
import { transactionalDatabase, type Rows, type TransactionalDatabase, type TransactionalDriver } from './database.js';
import { paramsByPlaceholder } from './placeholders.js';
import type { OutcomeTableOptions } from './table.js';

/** What the adapter uses of a Drizzle database (`NodePgDatabase` has all of it); `Tx` is its transaction type. */
export interface DrizzleDatabaseLike<Tx> {
  transaction<T>(
    transaction: (tx: Tx) => Promise<T>,
    config?: { isolationLevel?: 'read committed' | 'repeatable read' | 'serializable' },
  ): Promise<T>;
  execute(query: never): unknown;
}

type DrizzleOrm = typeof import('drizzle-orm');
let drizzleOrm: Promise<DrizzleOrm> | undefined;

/** Has Drizzle run `text` with `$n` parameters on `executor` (the database, or a `tx`). */
async function execute(executor: unknown, text: string, params: readonly unknown[]): Promise<Rows> {
  const { sql } = await (drizzleOrm ??= import('drizzle-orm'));
  const chunks = paramsByPlaceholder(text, params).map((piece) => (typeof piece === 'string' ? sql.raw(piece) : sql.param(piece.value)));
  const result = (await (executor as { execute(query: unknown): PromiseLike<{ rows: unknown[] }> }).execute(sql.join(chunks))) as {
    rows: unknown[];
  };
  return result.rows as Rows;
}

function drizzleDriver<Tx>(db: DrizzleDatabaseLike<Tx>): TransactionalDriver<Tx> {
  return {
    name: 'drizzle',
    transaction: (isolation, body) =>
      db.transaction((tx) => body({ tx, query: (text, params) => execute(tx, text, params) }), { isolationLevel: isolation }),
    query: (text, params) => execute(db, text, params),
  };
}

/**
 * A transactional database over a Drizzle `NodePgDatabase` (from
 * `drizzle-orm/node-postgres`): each attempt runs in `db.transaction`, and
 * the tool receives its `tx`. `options` names the outcome table.
 *
 * Drizzle checks clients out of its `pg.Pool` without listening for their
 * `'error'` event, so a connection lost mid-transaction is an uncaught
 * exception unless the pool's clients listen (docs/transactional.md shows how).
 */
export function drizzleDatabase<Tx>(db: DrizzleDatabaseLike<Tx>, options: OutcomeTableOptions = {}): TransactionalDatabase<Tx> {
  shaped('a Drizzle database (with transaction() and execute())', ['transaction', 'execute']).check(db, {
    owner: 'drizzleDatabase',
    option: 'db',
  });
  return transactionalDatabase(drizzleDriver(db), options, 'drizzleDatabase');
}
