/**
 * examples/mcp end to end: the worker spawns the fake mail server over stdio,
 * submits one turn twice, and the server sends the mail once.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisHandle } from '../support/redis.js';

const script = fileURLToPath(new URL('../../examples/mcp/worker.ts', import.meta.url));
let redis: RedisHandle;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

describe('the MCP example', () => {
  it('exposes the mail server tools through the queue and sends a resubmitted mail once', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], {
      env: { ...process.env, REDIS_URL: redis.url },
      timeout: 90_000,
    });
    expect(stdout).toContain('tools the model sees: ["mail_send_mail","mail_find_mail","mail_mail_count"]');
    expect(stdout).toMatch(/first submit: [^]*content: 'sent mail_[0-9a-f]+ to ops@example.com',\s+outcome: 'executed'/);
    expect(stdout).toMatch(/second submit: [^]*outcome: 'replayed'/);
    expect(stdout).toMatch(/mails the server really sent: 1\n/);
  });
});
