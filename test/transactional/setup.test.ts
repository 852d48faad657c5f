/**
 * The outcome table's setup on a real PostgreSQL: the start-up check (a
 * missing table prints the migrate command, a different one is named
 * difference by difference, nothing written either way), the migration
 * (on an empty database, twice in a row, two at once, on a table with a
 * wrong column), names that could carry SQL, and `tool-receipts migrate`
 * itself, in process, against Redis and PostgreSQL both real.
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import {
  applyOutcomeTable,
  checkOutcomeTable,
  outcomeTable,
  outcomeTableDdl,
  OutcomeTableMismatchError,
  OutcomeTableMissingError,
  pgDatabase,
} from '../../src/transactional/index.js';
import { Capture } from '../cli/support.js';
import { postgresSkipReason, startPostgres, type PostgresHandle } from '../support/postgres.js';
import { startRedis, type RedisHandle } from '../support/redis.js';

describe.skipIf(postgresSkipReason() !== undefined)('the outcome table', () => {
  let postgres: PostgresHandle;
  let admin: pg.Pool;
  let redis: RedisHandle;
  let schemaSerial = 0;
  beforeAll(async () => {
    [postgres, redis] = await Promise.all([startPostgres(), startRedis()]);
    admin = new pg.Pool({ connectionString: postgres.url, max: 4 });
  });
  afterAll(async () => {
    await admin?.end();
    await Promise.all([postgres?.stop(), redis?.stop()]);
  });

  /** A schema name no other test uses, so each starts from an empty database. */
  const freshSchema = () => `s${process.pid}_${++schemaSerial}`;
  const tables = async (schema: string) =>
    (
      await admin.query(
        'SELECT relname::text AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE nspname = $1 ORDER BY 1',
        [schema],
      )
    ).rows.map((r: { name: string }) => r.name);
  const withDb = async (schema: string, body: (db: ReturnType<typeof pgDatabase<pg.Pool>>) => Promise<void>, table?: string) => {
    const pool = new pg.Pool({ connectionString: postgres.url, max: 4 });
    try {
      await body(pgDatabase(pool, { schema, ...(table ? { table } : {}) }));
    } finally {
      await pool.end();
    }
  };

  async function cli(argv: string[], env: Record<string, string> = { REDIS_URL: redis.url }) {
    const stdout = new Capture();
    const stderr = new Capture();
    const code = await runCli(argv, { stdout, stderr, env });
    return { code, stdout: stdout.text, stderr: stderr.text };
  }

  it('is reported missing at start-up with the command that creates it, writing nothing', async () => {
    await withDb('public', async (db) => {
      const error = await checkOutcomeTable(db).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OutcomeTableMissingError);
      expect((error as Error).message).toContain('create it with: tool-receipts migrate --postgres <url>');
    });
    const schema = freshSchema();
    await withDb(
      schema,
      async (db) => {
        await expect(checkOutcomeTable(db)).rejects.toMatchObject({
          code: 'transactional.table_missing',
          command: `tool-receipts migrate --postgres <url> --schema ${schema} --table calls`,
        });
      },
      'calls',
    );
    expect(await tables(schema)).toEqual([]);
  });

  it('is created on an empty database, and a second migration changes nothing', async () => {
    const schema = freshSchema();
    await withDb(schema, async (db) => {
      expect(await applyOutcomeTable(db)).toEqual({
        table: `${schema}.tool_receipt_outcomes`,
        changes: [
          `created schema ${schema}`,
          `created table ${schema}.tool_receipt_outcomes`,
          'created index tool_receipt_outcomes_started_at',
        ],
      });
      await checkOutcomeTable(db);
      expect(await applyOutcomeTable(db)).toEqual({ table: `${schema}.tool_receipt_outcomes`, changes: [] });
    });
    expect(await tables(schema)).toEqual(['tool_receipt_outcomes', 'tool_receipt_outcomes_pkey', 'tool_receipt_outcomes_started_at']);
  });

  it('is created once when two migrations run at once', async () => {
    const schema = freshSchema();
    await withDb(schema, async (db) => {
      const both = await Promise.all([applyOutcomeTable(db), applyOutcomeTable(db)]);
      expect(both.map((m) => m.changes.length).sort()).toEqual([0, 3]);
    });
  });

  it('refuses, changing nothing, a table with a wrong column, and the check names each difference', async () => {
    const schema = freshSchema();
    await admin.query(`CREATE SCHEMA ${schema}`);
    const ddl = outcomeTableDdl(outcomeTable({ schema }))[0]!
      .replace('result json', 'result jsonb')
      .replace('attempt integer NOT NULL', 'attempt bigint');
    await admin.query(ddl);
    await withDb(schema, async (db) => {
      const error = await applyOutcomeTable(db).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OutcomeTableMismatchError);
      expect((error as OutcomeTableMismatchError).differences).toEqual([
        'column attempt is bigint, not integer',
        'column attempt allows NULL, but must be NOT NULL',
        'column result is jsonb, not json',
      ]);
      await expect(checkOutcomeTable(db)).rejects.toMatchObject({ code: 'transactional.table_mismatch' });
    });
    // Not even the retention index was added.
    expect(await tables(schema)).toEqual(['tool_receipt_outcomes', 'tool_receipt_outcomes_pkey']);
  });

  it.each([
    ['no unique key', 'DROP CONSTRAINT tool_receipt_outcomes_pkey', /there is no unique key on \(receipt_key, epoch\)/],
    [
      'a deferrable key',
      'DROP CONSTRAINT tool_receipt_outcomes_pkey, ADD UNIQUE (receipt_key, epoch) DEFERRABLE',
      /there is no unique key/,
    ],
    [
      'a key on the receipt alone',
      'ADD CONSTRAINT one_per_receipt UNIQUE (receipt_key)',
      /the unique index one_per_receipt on \(receipt_key\) would refuse outcomes of other receipt lifetimes/,
    ],
    ['a NOT NULL column of its own without a default', 'ADD COLUMN tenant text NOT NULL', /column tenant is NOT NULL without a default/],
    [
      'a key on the receipt alone that carries the epoch as an INCLUDE column',
      'ADD CONSTRAINT one_per_receipt UNIQUE (receipt_key) INCLUDE (epoch)',
      /the unique index one_per_receipt on \(receipt_key\) would refuse outcomes of other receipt lifetimes/,
    ],
    ['a missing column', 'DROP COLUMN finished_at', /column finished_at is missing/],
  ])('refuses a table with %s', async (_, alter, difference) => {
    const schema = freshSchema();
    await withDb(schema, async (db) => {
      await applyOutcomeTable(db);
      await admin.query(`ALTER TABLE ${schema}.tool_receipt_outcomes ${alter}`);
      const error = (await checkOutcomeTable(db).catch((e: unknown) => e)) as OutcomeTableMismatchError;
      expect(error).toBeInstanceOf(OutcomeTableMismatchError);
      expect(error.differences.join('; ')).toMatch(difference);
    });
  });

  it('accepts columns of the team’s own that an insert may leave out', async () => {
    const schema = freshSchema();
    await withDb(schema, async (db) => {
      await applyOutcomeTable(db);
      await admin.query(`ALTER TABLE ${schema}.tool_receipt_outcomes ADD COLUMN note text, ADD COLUMN region text NOT NULL DEFAULT 'eu'`);
      await checkOutcomeTable(db);
      // Filled in by the database: an identity, a generated column.
      await admin.query(
        `ALTER TABLE ${schema}.tool_receipt_outcomes ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY,
           ADD COLUMN key_length int NOT NULL GENERATED ALWAYS AS (length(receipt_key)) STORED`,
      );
      await checkOutcomeTable(db);
      // A key that carries other columns beside its own (INCLUDE) is still the key.
      await admin.query(
        `ALTER TABLE ${schema}.tool_receipt_outcomes DROP CONSTRAINT tool_receipt_outcomes_pkey,
           ADD CONSTRAINT outcome_key PRIMARY KEY (receipt_key, epoch) INCLUDE (attempt)`,
      );
      await checkOutcomeTable(db);
    });
  });

  it('is the DDL docs/transactional.md prints', () => {
    const page = readFileSync(new URL('../../docs/transactional.md', import.meta.url), 'utf8');
    for (const statement of outcomeTableDdl(outcomeTable())) expect(page).toContain(`${statement};`);
  });

  it('refuses names that are not plain lower-case identifiers, so none can carry SQL', () => {
    for (const table of ['x"; DROP TABLE tickets; --', 'Outcomes', 'a.b', '1st', '', 'x'.repeat(49), 'é']) {
      expect(() => outcomeTable({ table }), table).toThrow(expect.objectContaining({ code: 'options.invalid' }));
    }
    expect(() => outcomeTable({ schema: 'public; DROP' })).toThrow(expect.objectContaining({ code: 'options.invalid' }));
    expect(() => outcomeTable({ tabel: 'x' } as never)).toThrow(/did you mean `table`/);
    expect(outcomeTable({ schema: 'app', table: 'tool_outcomes' }).qualified).toBe('"app"."tool_outcomes"');
  });

  describe('tool-receipts migrate', () => {
    it('creates the table, then says nothing changed, and --check agrees', async () => {
      const schema = freshSchema();
      const first = await cli(['migrate', '--postgres', postgres.url, '--schema', schema]);
      expect(first.stderr).toBe('');
      expect(first.code).toBe(0);
      expect(first.stdout).toContain(`Created table ${schema}.tool_receipt_outcomes.`);
      const second = await cli(['migrate', '--postgres', postgres.url, '--schema', schema, '--json']);
      expect(second.code).toBe(0);
      expect(JSON.parse(second.stdout)).toEqual({ table: `${schema}.tool_receipt_outcomes`, changes: [] });
      const check = await cli(['migrate', '--check', '--postgres', postgres.url, '--schema', schema]);
      expect(check).toMatchObject({ code: 0, stderr: '' });
    });

    it('needs no Redis: it runs with REDIS_URL and --redis naming a port nothing listens on', async () => {
      const schema = freshSchema();
      const dead = 'redis://127.0.0.1:1';
      const run = await cli(['migrate', '--postgres', postgres.url, '--schema', schema, '--redis', dead], { REDIS_URL: dead });
      expect(run).toMatchObject({ code: 0, stderr: '' });
      expect(run.stdout).toContain(`Created table ${schema}.tool_receipt_outcomes.`);
    });

    it('refuses a table with a wrong column, with its code, and exits 1', async () => {
      const schema = freshSchema();
      await admin.query(`CREATE SCHEMA ${schema}`);
      await admin.query(`CREATE TABLE ${schema}.tool_receipt_outcomes (receipt_key text, epoch text)`);
      const run = await cli(['migrate', '--postgres', postgres.url, '--schema', schema, '--json']);
      expect(run.code).toBe(1);
      const { error } = JSON.parse(run.stderr) as { error: { code: string; message: string } };
      expect(error.code).toBe('transactional.table_mismatch');
      expect(error.message).toContain('column attempt is missing');
    });

    it('--check on a database without the table prints the command to run, with the URL it was given, password masked', async () => {
      const schema = freshSchema();
      const withPassword = new URL(postgres.url);
      withPassword.password = 's3cret';
      const check = await cli(['migrate', '--check', '--postgres', withPassword.href, '--schema', schema]);
      expect(check.code).toBe(1);
      withPassword.password = '***';
      expect(check.stderr).toContain(`create it with: tool-receipts migrate --postgres ${withPassword.href} --schema ${schema}\n`);
      expect(check.stderr).not.toContain('s3cret');
    });

    it('refuses a bad command line with exit 2, and an unreachable database with exit 1 and its own code, password masked', async () => {
      expect((await cli(['migrate'])).code).toBe(2);
      expect((await cli(['migrate', '--postgres', 'redis://x:1'])).stderr).toContain('must be a postgres:// or postgresql:// URL');
      const bad = await cli(['migrate', '--postgres', postgres.url, '--table', 'Bad-Name']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('--table must be lower-case letters');
      const down = await cli(['migrate', '--postgres', 'postgres://app:s3cret@127.0.0.1:1/app', '--json']);
      expect(down.code).toBe(1);
      const { error } = JSON.parse(down.stderr) as { error: { code: string; message: string } };
      expect(error.code).toBe('cli.postgres_error');
      expect(error.message).not.toContain('s3cret');
    });
  });
});
