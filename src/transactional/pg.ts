/**
 * The node-postgres adapter: a `pg.Pool` as a {@link TransactionalDriver}.
 * The tool receives the pool client its transaction runs on. Typed by shape,
 * so this entry point loads and compiles without `pg` or `@types/pg`.
 */
import { shaped } from '../core/options.js';
import { transactionalDatabase, type IsolationLevel, type Rows, type TransactionalDatabase, type TransactionalDriver } from './database.js';
import type { OutcomeTableOptions } from './table.js';

/** What the adapter uses of a pool client (`pg.PoolClient` has all of it). */
export interface PgClientLike {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; command?: string }>;
  release(err?: Error | boolean): void;
  on(event: 'error', listener: (err: Error) => void): unknown;
  removeListener(event: 'error', listener: (err: Error) => void): unknown;
}

/** What the adapter uses of a pool (`pg.Pool` has all of it). */
export interface PgPoolLike {
  connect(): Promise<PgClientLike>;
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
}

/**
 * The client type a pool hands out. `pg.Pool.connect` is overloaded (a
 * promise, or a callback), and TypeScript infers from the last overload
 * only, so both are matched to reach the promise's.
 */
export type PgClientOf<P> = P extends { connect(): Promise<infer C>; connect(callback: never): void }
  ? C
  : P extends { connect(): Promise<infer C> }
    ? C
    : never;

/** The SQL of each isolation level (fixed strings, never built from input). */
export const ISOLATION_SQL: Readonly<Record<IsolationLevel, string>> = {
  'read committed': 'READ COMMITTED',
  'repeatable read': 'REPEATABLE READ',
  serializable: 'SERIALIZABLE',
};

/** pg answers COMMIT in an aborted transaction with a ROLLBACK tag, not an error: say so as one. */
export class CommitRolledBackError extends Error {
  constructor() {
    super('COMMIT was answered with ROLLBACK: the transaction had already aborted');
    this.name = 'CommitRolledBackError';
  }
}

function pgDriver<P extends PgPoolLike>(pool: P): TransactionalDriver<PgClientOf<P>> {
  return {
    name: 'pg',
    async transaction(isolation, body) {
      const client = await pool.connect();
      // pg emits 'error' on a checked-out client whose connection drops, and
      // the pool listens only while the client is idle: without this, a lost
      // connection would be an uncaught exception instead of a failed query.
      let broken: Error | boolean = false;
      const onError = (err: Error) => {
        broken ||= err;
      };
      client.on('error', onError);
      const query = async (text: string, params: readonly unknown[]): Promise<Rows> => (await client.query(text, [...params])).rows as Rows;
      let bodyFailed = false;
      try {
        await client.query(`BEGIN ISOLATION LEVEL ${ISOLATION_SQL[isolation]}`);
        let value;
        try {
          value = await body({ tx: client as PgClientOf<P>, query });
        } catch (error) {
          bodyFailed = true;
          // Whether the connection is still usable is the rollback's to say.
          await client.query('ROLLBACK').catch((err: Error) => {
            broken ||= err;
          });
          throw error;
        }
        const reply = await client.query('COMMIT');
        if (reply.command === 'ROLLBACK') throw new CommitRolledBackError();
        return value;
      } catch (error) {
        if (!bodyFailed && !isErrorReply(error)) broken ||= true;
        throw error;
      } finally {
        client.removeListener('error', onError);
        client.release(broken);
      }
    },
    async query(text, params) {
      return (await pool.query(text, [...params])).rows as Rows;
    },
  };
}

/**
 * Whether a failure is the server refusing a statement (an ERROR reply,
 * after which the connection is fine), as opposed to a lost connection or a
 * FATAL one, after which it must not be reused.
 */
function isErrorReply(error: unknown): boolean {
  if (error instanceof CommitRolledBackError) return true;
  const severity = (error as { severity?: unknown } | null)?.severity;
  return typeof severity === 'string' && severity !== 'FATAL' && severity !== 'PANIC';
}

/**
 * A transactional database over a node-postgres `pg.Pool`: each attempt
 * checks out a client, and the tool receives that `pg.PoolClient`, inside
 * the open transaction. `options` names the outcome table (default
 * `public.tool_receipt_outcomes`).
 */
export function pgDatabase<P extends PgPoolLike>(pool: P, options: OutcomeTableOptions = {}): TransactionalDatabase<PgClientOf<P>> {
  shaped('a pg.Pool (with connect() and query())', ['connect', 'query']).check(pool, { owner: 'pgDatabase', option: 'pool' });
  return transactionalDatabase(pgDriver(pool), options, 'pgDatabase');
}
