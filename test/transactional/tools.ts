/**
 * The transactional tool the wrapper tests and their worker processes run:
 * `record_call` inserts one `tickets` row per run (keyed by the call's label,
 * with the attempt that wrote it; no unique key, so a second run would show
 * as a second row), through node-postgres inside the wrapper's transaction.
 * Hooks let a test freeze or stop the process at each crash point.
 */
import pg from 'pg';
import { z } from 'zod';
import { defineTool, type TransactionalToolContext } from '../../src/bullmq/index.js';
import { pgDatabase, transactionalDatabase, type RunTransactionalOptions } from '../../src/transactional/index.js';

/** Where a test may stop an attempt: before BEGIN, before and after the tool's write, after COMMIT. */
export type CrashPoint = 'before-begin' | 'before-write' | 'after-write' | 'after-commit';

export interface RecordCallOptions {
  /** Called at each point; may freeze or stop the process. */
  readonly at?: (point: CrashPoint) => Promise<void> | void;
  readonly transaction?: RunTransactionalOptions;
  /** Told when an attempt's transaction (one that takes its lifetime's lock shared) ends: committed (COMMIT acknowledged) or not. */
  readonly ended?: (committed: boolean) => void;
  /** How long the tool holds its transaction after its write (a `pg_sleep`), so crashes land inside it. */
  readonly holdMs?: number;
  /** Throw inside the transaction, after the write, when the label says `fail`. */
  readonly failOn?: string;
}

/** A pool that survives its server going away (errors on idle clients are dropped; the pg adapter listens on busy ones). */
export function dataPool(url: string, max = 10): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max });
  pool.on('error', () => undefined);
  return pool;
}

/**
 * `record_call` on `pool`. Its database is node-postgres wrapped in an
 * adapter of the test's own, so a hook can run just before BEGIN and just
 * after COMMIT was acknowledged (a point no tool code can reach).
 */
export function recordCallTool(pool: pg.Pool, options: RecordCallOptions = {}) {
  const inner = pgDatabase(pool).driver;
  const database = transactionalDatabase({
    name: 'pg-with-crash-points',
    async transaction(isolation, body) {
      // A takeover's hold on the lifetime is a transaction too, but no attempt: only one that takes the lock shared is told.
      let attempt = false;
      const watched: typeof body = (open) =>
        body({
          tx: open.tx,
          query: (text, params) => {
            if (text.includes('pg_try_advisory_xact_lock_shared(')) attempt = true;
            return open.query(text, params);
          },
        });
      await options.at?.('before-begin');
      let value;
      try {
        value = await inner.transaction(isolation, watched);
      } catch (error) {
        if (attempt) options.ended?.(false);
        throw error;
      }
      if (attempt) options.ended?.(true);
      await options.at?.('after-commit');
      return value;
    },
    query: (text, params) => inner.query(text, params),
  });
  return defineTool({
    name: 'record_call',
    input: z.object({ label: z.string() }),
    effect: 'transactional',
    destructive: false,
    database,
    ...(options.transaction ? { transaction: options.transaction } : {}),
    async execute(args, ctx: TransactionalToolContext<pg.PoolClient>) {
      await options.at?.('before-write');
      const { rows } = await ctx.tx.query('INSERT INTO tickets (call, attempt) VALUES ($1, $2) RETURNING attempt', [
        args.label,
        ctx.attempt,
      ]);
      if (options.holdMs) await ctx.tx.query('SELECT pg_sleep($1)', [options.holdMs / 1000]);
      await options.at?.('after-write');
      if (options.failOn !== undefined && args.label.includes(options.failOn)) throw new Error(`record_call refused ${args.label}`);
      return { label: args.label, writtenBy: rows[0].attempt as number };
    },
  });
}
