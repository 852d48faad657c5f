/**
 * `tool-receipts migrate --postgres <url>`: creates the outcome table that
 * transactional tools write (idempotent), or with `--check` only says
 * whether the database has it as the runner needs it. Refuses, changing
 * nothing, a table that differs. Loads `pg` only when run.
 */
import { maskedUrl, ToolReceiptsError } from '../../core/errors.js';
import { InvalidOptionsError } from '../../core/options.js';
import { applyOutcomeTable, checkOutcomeTable } from '../../transactional/setup.js';
import { pgDatabase } from '../../transactional/pg.js';
import { OutcomeTableMissingError } from '../../transactional/errors.js';
import { outcomeTable, type OutcomeTable } from '../../transactional/table.js';
import { JSON_OPTION, expectPositionals, stringOption, type CommandSpec, type OfflineCommandContext } from '../command.js';
import { CliUsageError, PostgresCommandError } from '../errors.js';
import { writeJson, writeLine } from '../format.js';

/** Arguments of {@link migrateCommand}. */
export interface MigrateArgs {
  /** The database URL (`postgres://…`). */
  readonly url: string;
  readonly target: OutcomeTable;
  /** Check only; write nothing. */
  readonly check: boolean;
  readonly json: boolean;
}

function checkedUrl(text: string | undefined): string {
  if (text === undefined)
    throw new CliUsageError('migrate needs --postgres <url>, the database the transactional tools write to', 'migrate');
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    throw new CliUsageError('--postgres is not a URL; write postgres://user@host:port/database', 'migrate');
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new CliUsageError(`--postgres must be a postgres:// or postgresql:// URL, got a ${parsed.protocol} one`, 'migrate');
  }
  return text;
}

async function loadPg(): Promise<(typeof import('pg'))['default']> {
  try {
    return (await import('pg')).default;
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ERR_MODULE_NOT_FOUND')
      throw new CliUsageError('migrate needs the pg package: npm install pg', 'migrate');
    throw error;
  }
}

/** Creates the outcome table where it is missing (or, with `check`, only looks), and prints what it did. */
export async function migrateCommand({ out, args }: OfflineCommandContext<MigrateArgs>): Promise<number> {
  const { Pool } = await loadPg();
  const pool = new Pool({ connectionString: args.url, max: 1, connectionTimeoutMillis: 10_000 });
  pool.on('error', () => undefined);
  const db = pgDatabase(pool, { schema: args.target.schema, table: args.target.table });
  const name = `${args.target.schema}.${args.target.table}`;
  try {
    if (args.check) {
      await checkOutcomeTable(db).catch((error: unknown) => {
        // The operator gave the URL: the command to run next names it rather than `<url>`.
        throw error instanceof OutcomeTableMissingError ? new OutcomeTableMissingError(args.target, maskedUrl(args.url)) : error;
      });
      if (args.json) writeJson(out, { table: name, ok: true });
      else writeLine(out, `The outcome table ${name} is as transactional tools need it.`);
      return 0;
    }
    const migration = await applyOutcomeTable(db);
    if (args.json) writeJson(out, migration);
    else if (migration.changes.length === 0)
      writeLine(out, `The outcome table ${name} was already there as it should be; nothing changed.`);
    else for (const change of migration.changes) writeLine(out, `${change[0]!.toUpperCase()}${change.slice(1)}.`);
    return 0;
  } catch (error) {
    if (error instanceof ToolReceiptsError) throw error;
    throw new PostgresCommandError(maskedUrl(args.url), error);
  } finally {
    await pool.end().catch(() => undefined);
  }
}

/** The `migrate` command. */
export const migrateSpec: CommandSpec<MigrateArgs> = {
  name: 'migrate',
  redis: false,
  synopsis: 'migrate --postgres <url>',
  summary: 'create the PostgreSQL outcome table of transactional tools',
  help: `Usage: tool-receipts migrate --postgres <url> [--schema <s>] [--table <t>] [--check] [--json]

Creates the table in which transactional tools record each call's outcome,
with its schema and retention index, when they are missing. Idempotent: on a
database that has the table it changes nothing. A table of that name whose
columns, types or unique key differ is refused and left as it is (exit 1).

  --postgres <url>  the database, postgres://user@host:port/database; the
                    password may come from $PGPASSWORD instead of the URL
  --schema <s>      schema of the table; default public
  --table <t>       name of the table; default tool_receipt_outcomes
  --check           write nothing: exit 1 unless the table is there and right
  --json            print what was done as JSON

It reaches PostgreSQL alone: no Redis is needed, and the connection
options are ignored.`,
  options: {
    ...JSON_OPTION,
    postgres: { type: 'string' },
    schema: { type: 'string' },
    table: { type: 'string' },
    check: { type: 'boolean' },
  },
  parse(values, positionals) {
    expectPositionals('migrate', positionals, []);
    const url = checkedUrl(stringOption(values, 'postgres'));
    const schema = stringOption(values, 'schema');
    const table = stringOption(values, 'table');
    let target: OutcomeTable;
    try {
      target = outcomeTable({ ...(schema === undefined ? {} : { schema }), ...(table === undefined ? {} : { table }) }, 'migrate');
    } catch (error) {
      if (!(error instanceof InvalidOptionsError)) throw error;
      throw new CliUsageError(`--${error.option ?? 'table'} must be ${error.message.replace(/^.*? must be /, '')}`, 'migrate');
    }
    return { url, target, check: values['check'] === true, json: values['json'] === true };
  },
  run: migrateCommand,
};
