/**
 * One throwaway PostgreSQL per test file, and the three drivers the
 * transactional runner has adapters for (node-postgres, Drizzle, Kysely)
 * over it, each with a tool write of its own kind: a ticket row inserted
 * through the driver's own transaction object. A `tickets` row per run of a
 * tool is what the tests count: no unique key hides a second one.
 */
import { integer, pgTable, text } from 'drizzle-orm/pg-core';
import { drizzle } from 'drizzle-orm/node-postgres';
import { Kysely, PostgresDialect, sql, type Transaction } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import {
  applyOutcomeTable,
  drizzleDatabase,
  kyselyDatabase,
  pgDatabase,
  type TransactionalDatabase,
  type OutcomeTableOptions,
} from '../../src/transactional/index.js';
import { startPostgres, type PostgresHandle } from '../support/postgres.js';

export const tickets = pgTable('tickets', { call: text('call').notNull(), attempt: integer('attempt').notNull() });

interface KyselySchema {
  tickets: { call: string; attempt: number };
}

/** One driver, as a test uses it. */
export interface DriverKit<Tx> {
  readonly name: 'pg' | 'drizzle' | 'kysely';
  readonly db: TransactionalDatabase<Tx>;
  /** The tool's write, through the driver's own transaction object. */
  insertTicket(tx: Tx, call: string, attempt: number): Promise<void>;
  /** The backend pid of the transaction's connection, asked through `tx`. */
  backendPid(tx: Tx): Promise<number>;
  /** One setting as the tool's transaction sees it. */
  setting(tx: Tx, name: string): Promise<string>;
  close(): Promise<void>;
}

export type AnyKit = DriverKit<any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * pg emits 'error' on a checked-out client whose connection drops; Drizzle and
 * Kysely do not listen, so their pools' clients get a listener (as
 * docs/transactional.md tells apps to). The pg adapter listens itself: its
 * pool gets none, which the crash tests rely on.
 */
function listeningPool(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 20 });
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

export function pgKit(url: string, table: OutcomeTableOptions = {}): DriverKit<pg.PoolClient> {
  const pool = new pg.Pool({ connectionString: url, max: 20 });
  pool.on('error', () => undefined);
  const value = async (client: pg.PoolClient, text: string) => String((await client.query(text)).rows[0].v);
  return {
    name: 'pg',
    db: pgDatabase(pool, table),
    insertTicket: async (client, call, attempt) =>
      void (await client.query('INSERT INTO tickets (call, attempt) VALUES ($1, $2)', [call, attempt])),
    backendPid: async (client) => Number(await value(client, 'SELECT pg_backend_pid() AS v')),
    setting: (client, name) => value(client, `SELECT current_setting('${name}') AS v`),
    close: () => pool.end(),
  };
}

export function drizzleKit(url: string, table: OutcomeTableOptions = {}) {
  const pool = listeningPool(url);
  const orm = drizzle(pool, { schema: { tickets } });
  const db = drizzleDatabase(orm, table);
  type Tx = Parameters<Parameters<typeof orm.transaction>[0]>[0];
  const kit: DriverKit<Tx> = {
    name: 'drizzle',
    db,
    insertTicket: async (tx, call, attempt) => void (await tx.insert(tickets).values({ call, attempt })),
    backendPid: async (tx) => Number((await tx.execute<{ v: number }>('SELECT pg_backend_pid() AS v')).rows[0]!.v),
    setting: async (tx, name) => String((await tx.execute<{ v: string }>(`SELECT current_setting('${name}') AS v`)).rows[0]!.v),
    close: () => pool.end(),
  };
  return kit;
}

export function kyselyKit(url: string, table: OutcomeTableOptions = {}): DriverKit<Transaction<KyselySchema>> {
  const pool = listeningPool(url);
  const orm = new Kysely<KyselySchema>({ dialect: new PostgresDialect({ pool }) });
  return {
    name: 'kysely',
    db: kyselyDatabase(orm, table),
    insertTicket: async (trx, call, attempt) => void (await trx.insertInto('tickets').values({ call, attempt }).execute()),
    backendPid: async (trx) => Number((await sql<{ v: number }>`SELECT pg_backend_pid() AS v`.execute(trx)).rows[0]!.v),
    setting: async (trx, name) => String((await sql<{ v: string }>`SELECT current_setting(${name}) AS v`.execute(trx)).rows[0]!.v),
    close: () => orm.destroy(),
  };
}

export const KIT_MAKERS = { pg: pgKit, drizzle: drizzleKit, kysely: kyselyKit } as const;

/** A PostgreSQL for the file, with the outcome table and `tickets`; and a plain pool to look at it with. */
export function usePostgres(): { handle: () => PostgresHandle; admin: () => pg.Pool } {
  let handle: PostgresHandle | undefined;
  let admin: pg.Pool | undefined;
  beforeAll(async () => {
    handle = await startPostgres();
    admin = new pg.Pool({ connectionString: handle.url, max: 4 });
    admin.on('error', () => undefined);
    await admin.query('CREATE TABLE tickets (call text NOT NULL, attempt integer NOT NULL)');
    const kit = pgKit(handle.url);
    await applyOutcomeTable(kit.db);
    await kit.close();
  });
  afterAll(async () => {
    await admin?.end();
    await handle?.stop();
  });
  return { handle: () => handle!, admin: () => admin! };
}

let serial = 0;
/** A receipt key no other test of the run uses. */
export function freshKey(label: string): string {
  serial += 1;
  return `trc:{acme|run-${process.pid}}|${label}|${serial}|${Date.now()}`;
}

/** The ticket rows written for `call`, by attempt. */
export async function ticketsOf(admin: pg.Pool, call: string): Promise<number[]> {
  const { rows } = await admin.query('SELECT attempt FROM tickets WHERE call = $1 ORDER BY attempt', [call]);
  return rows.map((r: { attempt: number }) => r.attempt);
}

/** The outcome rows of a receipt key, committed ones only. */
export async function outcomeRows(
  admin: pg.Pool,
  receiptKey: string,
): Promise<{ epoch: string; attempt: number; result: string | null }[]> {
  const { rows } = await admin.query(
    'SELECT epoch, attempt, result::text AS result FROM tool_receipt_outcomes WHERE receipt_key = $1 ORDER BY epoch',
    [receiptKey],
  );
  return rows;
}

/** A promise and the function that resolves it, for holding a tool mid-transaction. */
export function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/** Polls `check` every 20 ms until it returns true; fails after `timeoutMs`. */
export async function until(check: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Whether a backend is waiting on a lock (the takeover's insert, held by another attempt's row). */
export async function someoneWaitsOnALock(admin: pg.Pool): Promise<boolean> {
  const { rows } = await admin.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'");
  return rows[0].n > 0;
}
