/**
 * The adapter example of docs/transactional.md (examples/transactional-adapter.ts),
 * run as an app would run it, against a real PostgreSQL: the table check
 * passes, a tool's write commits with its outcome, a later attempt replays
 * it, and a write whose connection died leaves nothing.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { postgresSkipReason } from '../support/postgres.js';
import { freshKey, usePostgres } from './fixture.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const script = fileURLToPath(new URL('../fixtures/transactional-example.ts', import.meta.url));

describe.skipIf(postgresSkipReason() !== undefined)('the example adapter (a pg.Client per attempt)', () => {
  const pgdb = usePostgres();

  it('commits once, replays, and rolls back a write whose connection died', async () => {
    const key = freshKey('example');
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ['--import', 'tsx', script],
        { cwd: repo, env: { ...process.env, POSTGRES_URL: pgdb.handle().url, RECEIPT_KEY: key }, timeout: 60_000 },
        (error, out, err) => (error ? reject(new Error(`${error.message}\n${err}`)) : resolve(out)),
      ),
    );
    const result = JSON.parse(/^RESULT (.*)$/m.exec(stdout)![1]!);
    expect(result).toEqual({
      first: { status: 'committed', result: 'T-1', attempt: 1 },
      second: 'T-1',
      crashed: 'not_committed',
      tickets: [{ call: key, attempt: 1 }],
    });
  });
});
