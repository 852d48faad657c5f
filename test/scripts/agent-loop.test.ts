/**
 * `npm run agent-loop` end to end: the example runs its worker fleet on this
 * file's Redis, kills one worker mid-call, and reports no repeated effect.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisHandle } from '../support/redis.js';

const script = fileURLToPath(new URL('../../examples/agent-loop.ts', import.meta.url));
let redis: RedisHandle;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

describe('the agent loop example', () => {
  it('completes every turn with a worker SIGKILLed mid-call and no effect repeated', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], {
      env: { ...process.env, REDIS_URL: redis.url },
      timeout: 90_000,
    });
    expect(stdout).toMatch(/!! worker \d+ is inside create_ticket .*SIGKILL/);
    expect(stdout).toMatch(/workers SIGKILLed mid-call\s+1\n/);
    expect(stdout).toMatch(/jobs \(one per turn with tool calls\)\s+2\n/);
    expect(stdout).toMatch(/DUPLICATE EFFECTS\s+0\n/);
    expect(stdout).toContain('Retrying turn 1 (as a restarted agent would) attached to its job');
    // The resume note lists the three calls that took effect, with their results.
    expect(stdout).toMatch(/do NOT call them again[^\n]*\n- create_ticket: result .*T-[0-9a-f]+.*\n- send_email: .*\n- send_email: /);
  });
});
