/**
 * docs/frameworks.md's worked examples (examples/framework-*.ts), run as
 * written against a throwaway Redis, twice in a row: each framework's own
 * loop asks for the refund's approval in its shape, runs the refund once
 * when approved, and a retry gets the recorded result without refunding again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runExample } from '../support/run-example.js';
import { startRedis, type RedisHandle } from '../support/redis.js';

let redis: RedisHandle;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

/** What each framework's model reads from the tool: the result as that framework hands it on. */
const RESULT_READ = {
  'ai-sdk': '{"type":"text","value":"{\\"refunded\\":250}"}',
  'openai-agents': '{"type":"text","text":"{\\"refunded\\":250}"}',
  mastra: '{"type":"text","value":"{\\"refunded\\":250}"}',
  langgraph: '{"refunded":250}',
} as const;

describe('the frameworks examples (examples/framework-*.ts)', () => {
  it.for(Object.entries(RESULT_READ))(
    '%s: asks for approval, refunds once when approved, a retry refunds nothing; twice in a row',
    async ([name, read], ctx) => {
      // They write under the default prefix and their own queue names: only on a server of their own.
      if (!redis.controllable) ctx.skip(`needs a throwaway Redis (${redis.uncontrollableReason ?? 'REDIS_URL is set'})`);
      for (let run = 0; run < 2; run++) {
        const { code, stdout, stderr } = await runExample(`framework-${name}.ts`, { REDIS_URL: redis.url }, 90_000);
        expect(code, stderr).toBe(0);
        const lines = stdout.split('\n').filter((line) => !line.startsWith('{'));
        expect(lines.filter((line) => line !== '')).toEqual([
          'approval asked: refund',
          'refunding 250 for A-17',
          `model: The tool said: ${read}`,
          `retried: The tool said: ${read}`,
        ]);
      }
    },
  );
});
