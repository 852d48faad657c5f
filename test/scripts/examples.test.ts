/**
 * The examples the docs show as they are (examples/quickstart.ts is the
 * front page's worker + producer; examples/testing-a-processor.ts is
 * docs/testing.md's snippet), run as written against a throwaway Redis: the
 * call is executed once and replayed for the redelivered turn, a second run
 * of the script does the same for its own run (they are rerunnable), every
 * run exits on its own, and without REDIS_URL each refuses to start. The
 * packed-package run of the quick start, on bullmq 6 and 5, is in
 * test/package/consumer.test.ts.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisHandle } from '../support/redis.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const example = (name: string) => fileURLToPath(new URL(`../../examples/${name}`, import.meta.url));

function runScript(script: string, env: Record<string, string | undefined>): Promise<{ code: number; stdout: string; stderr: string }> {
  const { REDIS_URL: _ignored, ...inherited } = process.env;
  return new Promise((resolve) => {
    // cwd is the repo, so tsx maps the package name to the sources through tsconfig.json's paths.
    execFile(
      process.execPath,
      ['--import', 'tsx', script],
      { cwd: repo, env: { ...inherited, ...env }, timeout: 60_000, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
      },
    );
  });
}

let redis: RedisHandle;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

describe('the quick start (examples/quickstart.ts)', () => {
  it('executes the call once, replays it for the redelivered turn, and exits; twice in a row', async (ctx) => {
    // It writes under the names a new user's app would (queue tool-calls, prefix trc): only on a server of its own.
    if (!redis.controllable) ctx.skip(`needs a throwaway Redis (${redis.uncontrollableReason ?? 'REDIS_URL is set'})`);
    for (let run = 0; run < 2; run++) {
      const { code, stdout, stderr } = await runScript(example('quickstart.ts'), { REDIS_URL: redis.url });
      expect(code, stderr).toBe(0);
      expect(stdout.match(/^sending "Your invoice" to ada@example\.com \(idempotency key trc_[0-9a-f]+\)$/gm)).toHaveLength(1);
      expect(stdout).toMatch(/^first executed \{"sent":true\}$/m);
      expect(stdout).toMatch(/^redelivered replayed \{"sent":true\}$/m);
    }
  });
});

describe('the testing example (examples/testing-a-processor.ts)', () => {
  it('executes then replays through testJob, sends once, and exits; twice in a row', async () => {
    for (let run = 0; run < 2; run++) {
      const { code, stdout, stderr } = await runScript(example('testing-a-processor.ts'), { REDIS_URL: redis.url });
      expect(code, stderr).toBe(0);
      expect(stdout).toMatch(/^executed replayed sent 1$/m);
    }
  });
});

describe.each(['quickstart.ts', 'testing-a-processor.ts'])('%s without REDIS_URL', (name) => {
  it('refuses to start, saying what to set', async () => {
    const { code, stdout, stderr } = await runScript(example(name), {});
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/set REDIS_URL.*redis:\/\/127\.0\.0\.1:6379/);
    expect(stdout).toBe('');
  });
});
