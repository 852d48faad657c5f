/**
 * Setting up the outcome table: the start-up check that a database's table
 * is the one the runner writes (or a typed error saying what to run, or
 * what differs), and the idempotent migration `tool-receipts migrate` runs.
 */
import type { Rows, TransactionalDatabase } from './database.js';
import { OutcomeTableMismatchError, OutcomeTableMissingError } from './errors.js';
import { createSchemaDdl, OUTCOME_COLUMNS, OUTCOME_KEY, outcomeTableDdl, type OutcomeTable } from './table.js';

type Query = (text: string, params: readonly unknown[]) => Promise<Rows>;

/** What differs between the table found and the outcome table; empty when it is usable. `undefined` when there is no table. */
async function tableDifferences(query: Query, target: OutcomeTable): Promise<string[] | undefined> {
  const [found] = await query(
    `SELECT c.oid::text AS oid, c.relkind::text AS kind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2`,
    [target.schema, target.table],
  );
  if (found === undefined) return undefined;
  if (found['kind'] !== 'r' && found['kind'] !== 'p')
    return [`${target.schema}.${target.table} is not a table (relkind ${String(found['kind'])})`];
  const oid = found['oid'];
  const columns = await query(
    `SELECT attname::text AS name, format_type(atttypid, atttypmod) AS type, NOT attnotnull AS nullable,
            atthasdef OR attidentity <> '' OR attgenerated <> '' AS has_default
       FROM pg_attribute WHERE attrelid = $1::oid AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
    [oid],
  );
  const differences: string[] = [];
  const byName = new Map(columns.map((c) => [String(c['name']), c]));
  for (const want of OUTCOME_COLUMNS) {
    const have = byName.get(want.name);
    if (have === undefined) {
      differences.push(`column ${want.name} is missing`);
      continue;
    }
    if (have['type'] !== want.type) differences.push(`column ${want.name} is ${String(have['type'])}, not ${want.type}`);
    if (have['nullable'] !== want.nullable)
      differences.push(`column ${want.name} ${want.nullable ? 'is NOT NULL, but must allow NULL' : 'allows NULL, but must be NOT NULL'}`);
  }
  const known = new Set(OUTCOME_COLUMNS.map((c) => c.name));
  for (const extra of columns) {
    // Other columns are the team's own, as long as the runner's insert can leave them out (a default, an identity, a
    // generated column fills them in).
    if (!known.has(String(extra['name'])) && extra['nullable'] === false && extra['has_default'] === false) {
      differences.push(`column ${String(extra['name'])} is NOT NULL without a default, so an outcome row cannot be inserted`);
    }
  }
  // A unique index's key columns only: INCLUDE columns are carried, not compared.
  const uniques = await query(
    `SELECT (SELECT relname::text FROM pg_class WHERE oid = i.indexrelid) AS name, i.indimmediate AS immediate, i.indpred IS NULL AND i.indexprs IS NULL AS plain,
            (SELECT string_agg(a.attname::text, ',' ORDER BY k.ord) FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
               JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
              WHERE k.ord <= i.indnkeyatts) AS columns
       FROM pg_index i WHERE i.indrelid = $1::oid AND i.indisunique AND i.indisvalid`,
    [oid],
  );
  const key = [...OUTCOME_KEY].sort().join(',');
  const columnsOf = (u: Rows[number]) =>
    String(u['columns'] ?? '')
      .split(',')
      .filter(Boolean);
  const isKey = (u: Rows[number]) => u['immediate'] === true && u['plain'] === true && [...columnsOf(u)].sort().join(',') === key;
  if (!uniques.some(isKey))
    differences.push(
      `there is no unique key on (${OUTCOME_KEY.join(', ')}) alone that is checked at once (not deferrable) and covers every row`,
    );
  for (const other of uniques) {
    const cols = columnsOf(other);
    if (!isKey(other) && !OUTCOME_KEY.every((c) => cols.includes(c))) {
      differences.push(
        `the unique index ${String(other['name'])} on (${cols.join(', ')}) would refuse outcomes of other receipt lifetimes`,
      );
    }
  }
  return differences;
}

/**
 * Checks, writing nothing, that `db` has its outcome table as the runner
 * writes it: for a worker's start-up, so a missing table is an error before
 * the first call. Throws {@link OutcomeTableMissingError} (whose message
 * prints the `tool-receipts migrate` command) when there is no table, and
 * {@link OutcomeTableMismatchError} naming each difference when the table's
 * columns, their types or nullability, or its unique key differ. Columns of
 * the team's own are allowed when an insert may leave them out.
 */
export async function checkOutcomeTable(db: TransactionalDatabase<unknown>): Promise<void> {
  const differences = await tableDifferences((text, params) => db.driver.query(text, params), db.outcomes);
  if (differences === undefined) throw new OutcomeTableMissingError(db.outcomes);
  if (differences.length > 0) throw new OutcomeTableMismatchError(db.outcomes, differences);
}

/** What {@link applyOutcomeTable} did. */
export interface OutcomeTableMigration {
  /** `schema.table`. */
  readonly table: string;
  /** Each change made, in order (`created table public.tool_receipt_outcomes`); empty when the table was already there and right. */
  readonly changes: readonly string[];
}

/**
 * Creates the outcome table (and its schema and retention index) when they
 * are missing, in one transaction under an advisory lock, so two migrations
 * at once do not collide. Idempotent: run on a database that has the table,
 * it changes nothing. A table that is there but differs is refused with
 * {@link OutcomeTableMismatchError} and left as it was (nothing written):
 * altering a table that holds outcomes is a decision for a person.
 */
export async function applyOutcomeTable(db: TransactionalDatabase<unknown>): Promise<OutcomeTableMigration> {
  const target = db.outcomes;
  const name = `${target.schema}.${target.table}`;
  return db.driver.transaction('read committed', async ({ query }) => {
    await query('SELECT pg_advisory_xact_lock(hashtext($1))', [`tool-receipts outcome table ${name}`]);
    const changes: string[] = [];
    const differences = await tableDifferences(query, target);
    if (differences !== undefined && differences.length > 0) throw new OutcomeTableMismatchError(target, differences);
    if (differences === undefined) {
      const [schema] = await query('SELECT 1 AS found FROM pg_namespace WHERE nspname = $1', [target.schema]);
      if (schema === undefined) {
        await query(createSchemaDdl(target), []);
        changes.push(`created schema ${target.schema}`);
      }
    }
    const [createTable, createIndex] = outcomeTableDdl(target) as [string, string];
    if (differences === undefined) {
      await query(createTable, []);
      changes.push(`created table ${name}`);
    }
    const [index] = await query('SELECT to_regclass($1) IS NOT NULL AS found', [`${target.schema}.${target.startedIndexName}`]);
    if (index?.['found'] !== true) {
      await query(createIndex, []);
      changes.push(`created index ${target.startedIndexName.replace(/"/g, '')}`);
    }
    return { table: name, changes };
  });
}
