/**
 * A gateway told to stop (SIGTERM) while a call runs: the worker process the
 * front started lets the call finish for up to the 30 s its docs give, so
 * the upstream answers and the receipt is settled; it is not cut off (and
 * left to read as ambiguous) after the 10 s it once got.
 */
import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { journaled } from '../mcp/support.js';
import { onProcessEnd } from '../support/cleanup.js';
import { freePort } from '../support/ports.js';
import { useRedis } from '../support/redis-fixture.js';
import { CLI_MAIN, fixtureGateway, gatewayClient, outcomeOf, ROOT } from './support.js';

const fixture = useRedis();
const TOKEN = 'shutdown-token-0123456789';
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

describe('a gateway stopped while a call runs', () => {
  it('lets the worker it started finish a 12 s call after SIGTERM, then exits', async () => {
    const { journal, config, prefix } = fixtureGateway({ http: { port: await freePort(), tokens: [{ tenant: 'acme', token: TOKEN }] } });
    const child = spawn(process.execPath, ['--import', 'tsx', CLI_MAIN, 'gateway', '--config', config, '--workers', '1'], {
      cwd: ROOT,
      env: { ...process.env, REDIS_URL: fixture.handle().url, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const unregister = onProcessEnd(() => child.kill('SIGKILL'));
    closers.push(async () => (unregister(), child.kill('SIGKILL')));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    let out = '';
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the gateway did not get ready:\n${out.slice(0, 2000)}`)), 60_000);
      // The front's line, and its worker's (which may come on either stream).
      const read = (chunk: Buffer) => {
        out += chunk.toString();
        const front = /^tool-receipts gateway on (\S+):/m.exec(out)?.[1];
        if (front === undefined || !/^tool-receipts gateway worker on queue /m.test(out)) return;
        clearTimeout(timer);
        resolve(front);
      };
      child.stdout.on('data', read);
      child.stderr.on('data', read);
    });
    const { client } = await gatewayClient(url, { token: TOKEN });
    closers.push(() => client.close());
    const answered = client
      .callTool({ name: 'op_nondestructive', arguments: { to: 'slow@example.com', holdMs: 12_000 } }, undefined, { timeout: 60_000 })
      .catch((error: unknown) => error);
    await journaled(journal, (e) => e.phase === 'received' && e.args?.to === 'slow@example.com', 30_000);
    const stoppedAt = Date.now();
    child.kill('SIGTERM');
    // The upstream answers after its 12 s (it would as well with its worker gone: the receipt below tells).
    await journaled(journal, (e) => e.phase === 'sent' && e.args?.to === 'slow@example.com', 40_000);
    expect(await exited).toBe(0);
    expect(Date.now() - stoppedAt).toBeGreaterThan(10_000);
    // The worker itself finished it: its receipt is settled, not left running to read as ambiguous.
    const redis = fixture.connect();
    const [receiptKey] = await redis.keys(`${prefix}:rcpt:*`);
    expect(receiptKey).toBeDefined();
    expect(await redis.hget(receiptKey!, 'status')).toBe('completed');
    // The front may have stopped answering its client before the worker finished: the call is settled either way.
    const result = await answered;
    if (!(result instanceof Error)) expect(outcomeOf(result as object)).toBe('executed');
  }, 90_000);
});
