/**
 * Where the outcome rows live: the schema and table names (checked, then
 * always double-quoted, so no name can carry SQL), and the table's DDL, the
 * one definition that docs/transactional.md prints, the migration applies
 * and the start-up check compares a database against.
 */
import { checkOptions, rule, type OptionsSchema } from '../core/options.js';

/** Schema used when none is named. */
export const DEFAULT_OUTCOME_SCHEMA = 'public';
/** Table used when none is named. */
export const DEFAULT_OUTCOME_TABLE = 'tool_receipt_outcomes';

/**
 * Lower-case letters, digits and `_`, starting with a letter or `_`. A table
 * name stops at 48 characters so the names derived from it (its key and
 * index, `<table>_started_at`) stay within PostgreSQL's 63.
 */
const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;
const MAX_SCHEMA_CHARS = 63;
const MAX_TABLE_CHARS = 48;

/** Names the outcome table: both optional, both plain lower-case identifiers. */
export interface OutcomeTableOptions {
  /** Schema of the table; default {@link DEFAULT_OUTCOME_SCHEMA}. Created by the migration when missing. */
  readonly schema?: string;
  /** Name of the table; default {@link DEFAULT_OUTCOME_TABLE}. */
  readonly table?: string;
}

/** A checked outcome table name, and the quoted forms SQL is built from. */
export interface OutcomeTable {
  readonly schema: string;
  readonly table: string;
  /** `"schema"."table"`, ready to put in a statement. */
  readonly qualified: string;
  /** The quoted name of the primary key on `(receipt_key, epoch)`. */
  readonly keyName: string;
  /** The quoted name of the index retention reads (`started_at`). */
  readonly startedIndexName: string;
}

function identifierRule(max: number) {
  return rule(
    `lower-case letters, digits and _ (not first a digit), at most ${max} characters`,
    (v) => typeof v === 'string' && v.length <= max && IDENTIFIER.test(v),
  );
}

const OUTCOME_TABLE_SCHEMA: OptionsSchema<OutcomeTableOptions> = {
  schema: identifierRule(MAX_SCHEMA_CHARS),
  table: identifierRule(MAX_TABLE_CHARS),
};

/** Double-quotes an identifier already checked against {@link IDENTIFIER} (which admits no quote). */
const quote = (name: string): string => `"${name}"`;

/**
 * Checks the names and returns the table they name. Throws
 * `InvalidOptionsError` (`options.invalid`) for a name that is not a plain
 * lower-case identifier: quotes, dots, spaces, upper case and anything else
 * that could change the statement it is put in are refused, not escaped.
 */
export function outcomeTable(options: OutcomeTableOptions = {}, owner = 'outcomeTable'): OutcomeTable {
  checkOptions(owner, options, OUTCOME_TABLE_SCHEMA);
  const schema = options.schema ?? DEFAULT_OUTCOME_SCHEMA;
  const table = options.table ?? DEFAULT_OUTCOME_TABLE;
  return Object.freeze({
    schema,
    table,
    qualified: `${quote(schema)}.${quote(table)}`,
    keyName: quote(`${table}_pkey`),
    startedIndexName: quote(`${table}_started_at`),
  });
}

/** One column as the table must have it: its name, `format_type` spelling and whether it may be NULL. */
export interface OutcomeColumn {
  readonly name: string;
  readonly type: string;
  readonly nullable: boolean;
}

/**
 * The columns, in order. `result` is `json` (not `jsonb`) so the text a
 * replay reads is the text the attempt wrote, byte for byte (jsonb reorders
 * keys and refuses `\u0000`); it is NULL while the attempt's transaction is
 * open (no one else can see the row then) and afterwards when the tool
 * returned `undefined`. `finished_at` is set with the result, so a committed
 * row always has it.
 */
export const OUTCOME_COLUMNS: readonly OutcomeColumn[] = [
  { name: 'receipt_key', type: 'text', nullable: false },
  { name: 'epoch', type: 'text', nullable: false },
  { name: 'attempt', type: 'integer', nullable: false },
  { name: 'started_at', type: 'timestamp with time zone', nullable: false },
  { name: 'finished_at', type: 'timestamp with time zone', nullable: true },
  { name: 'result', type: 'json', nullable: true },
];

/** The unique key: at most one outcome per receipt lifetime. */
export const OUTCOME_KEY: readonly string[] = ['receipt_key', 'epoch'];

/**
 * The statements that create the table and its retention index, each
 * idempotent. The schema is not among them: creating one needs a privilege
 * that `IF NOT EXISTS` does not spare, so the migration creates it only
 * when it is missing.
 */
export function outcomeTableDdl(target: OutcomeTable): string[] {
  const columns = OUTCOME_COLUMNS.map((c) => `  ${c.name} ${c.type}${c.nullable ? '' : ' NOT NULL'}`).join(',\n');
  return [
    `CREATE TABLE IF NOT EXISTS ${target.qualified} (\n${columns},\n  CONSTRAINT ${target.keyName} PRIMARY KEY (${OUTCOME_KEY.join(', ')})\n)`,
    `CREATE INDEX IF NOT EXISTS ${target.startedIndexName} ON ${target.qualified} (started_at)`,
  ];
}

/** The statement that creates the table's schema. */
export function createSchemaDdl(target: OutcomeTable): string {
  return `CREATE SCHEMA IF NOT EXISTS ${quote(target.schema)}`;
}
