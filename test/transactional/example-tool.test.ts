/**
 * docs/transactional.md's tool example (examples/transactional-tool.ts), run
 * as an app would run it against a throwaway Redis and PostgreSQL: the call
 * executes, the redelivered turn replays it, one ticket row exists; twice in
 * a row (the script is rerunnable).
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisHandle } from '../support/redis.js';
import { usePostgres } from './fixture.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const script = fileURLToPath(new URL('../../examples/transactional-tool.ts', import.meta.url));
const postgres = usePostgres();
let redis: RedisHandle;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

const run = () =>
  new Promise<string>((resolve, reject) =>
    execFile(
      process.execPath,
      ['--import', 'tsx', script],
      { cwd: repo, env: { ...process.env, REDIS_URL: redis.url, DATABASE_URL: postgres.handle().url }, timeout: 60_000 },
      (error, out, err) => (error ? reject(new Error(`${error.message}\n${err}`)) : resolve(out)),
    ),
  );

describe('the transactional tool example', () => {
  it('creates the ticket once and replays it for the redelivered turn; twice in a row', async () => {
    for (let i = 0; i < 2; i++) {
      const stdout = await run();
      expect(stdout).toMatch(/^first executed \{"ticket":\d+\}$/m);
      expect(stdout).toMatch(/^redelivered replayed \{"ticket":\d+\}$/m);
      expect(stdout).toMatch(/^tickets 1$/m);
    }
  });
});
