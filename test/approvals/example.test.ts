/**
 * docs/approvals.md's worked example (examples/approvals.ts), run as written
 * against a throwaway Redis: the refund waits, runs once when approved, and
 * when denied never runs and tells the model who denied it and why. Twice in a
 * row (the example is rerunnable).
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

describe('the approvals example (examples/approvals.ts)', () => {
  it('waits, runs once when approved, never runs when denied, and exits; twice in a row', async (ctx) => {
    // It writes under the default prefix and its own queue name: only on a server of its own.
    if (!redis.controllable) ctx.skip(`needs a throwaway Redis (${redis.uncontrollableReason ?? 'REDIS_URL is set'})`);
    for (let run = 0; run < 2; run++) {
      const { code, stdout, stderr } = await runExample('approvals.ts', { REDIS_URL: redis.url });
      expect(code, stderr).toBe(0);
      expect(
        stdout.match(/^awaiting approval: refund of 250 is above 100 \{"orderId":"A-17","amount":250,"card":"\*\*\*\*4242"\}$/gm),
      ).toHaveLength(2);
      expect(stdout.match(/^refunding 250 for A-17$/gm)).toHaveLength(1);
      expect(stdout).toMatch(/^approveCall executed \{"refunded":250\}$/m);
      expect(stdout).toMatch(
        /^denyCall denied Not run: refund was denied by "ana@example\.com", who was asked to approve it\. The reason given: "refunds above 100 need a ticket"\. Do not retry it\.$/m,
      );
    }
  });
});
