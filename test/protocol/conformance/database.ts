/**
 * The PostgreSQL of a conformance test file: a throwaway cluster
 * (test/support/postgres.ts) with the outcome table the library's migration
 * makes, started before the file's tests and stopped after; undefined
 * throughout where no PostgreSQL can run here (the tests that need it say so).
 */
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { applyOutcomeTable, pgDatabase } from '../../../src/transactional/index.js';
import { postgresSkipReason, startPostgres, type PostgresHandle } from '../../support/postgres.js';

export interface OutcomeDatabase {
  /** The server's URL; undefined when none runs. */
  url(): string | undefined;
  /** The file's connection for reading what committed and ending sessions; undefined when no server runs. */
  observer(): pg.Client | undefined;
}

export function useOutcomeDatabase(): OutcomeDatabase {
  let handle: PostgresHandle | undefined;
  let observer: pg.Client | undefined;
  beforeAll(async () => {
    if (postgresSkipReason() !== undefined) return;
    handle = await startPostgres();
    const pool = new pg.Pool({ connectionString: handle.url, max: 2 });
    try {
      await applyOutcomeTable(pgDatabase(pool));
    } finally {
      await pool.end();
    }
    observer = new pg.Client({ connectionString: handle.url });
    observer.on('error', () => undefined);
    await observer.connect();
  });
  afterAll(async () => {
    await observer?.end();
    await handle?.stop();
  });
  return { url: () => handle?.url, observer: () => observer };
}
