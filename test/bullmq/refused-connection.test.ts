/**
 * A receipts Redis that is wrong or down, met as a new user meets it: with
 * the README's client (`new Redis(url, { commandTimeout: 5_000 })`) on a port
 * nothing listens on. `processor.ready()` fails with `redis.unavailable`
 * naming the URL (password masked) instead of resolving; a claim the client
 * never sent fails as never sent (`redis.unavailable`, `sent: false`, nothing
 * to release) at the deadline, not as "whether it ran is unknown"
 * (`redis.timeout`) after the release retries; and a claim held while the
 * client reconnects goes out once it is ready. On node-redis, a client whose
 * server went away fails `ready()` the same way. Real servers and ports.
 */
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, withToolReceipts } from '../../src/bullmq/index.js';
import { toolCallArgsHash } from '../../src/core/index.js';
import type { RedisConnection } from '../../src/redis/connection/connection.js';
import { ReceiptsRedisUnavailableError, RedisConnectionLostError } from '../../src/redis/index.js';
import { luaScript } from '../../src/redis/scripts/scripts.js';
import { testJob } from '../../src/testing/index.js';
import { freePort } from '../support/ports.js';
import { faultTestsSupported, startRedis, type RedisHandle } from '../support/redis.js';
import { silent } from './fixture.js';

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

function emailTool(sent: string[]) {
  return defineTool({ name: 'send_email', input: z.object({ to: z.string() }), effect: 'opaque', execute: ({ to }) => void sent.push(to) });
}

/** An ioredis client as the README makes the receipts one, closed after the test. */
function readmeClient(url: string, options: { commandTimeout?: number } = {}): Redis {
  const client = new Redis(url, { commandTimeout: 5_000, ...options });
  client.on('error', () => undefined);
  closers.push(async () => client.disconnect());
  return client;
}

async function server(): Promise<RedisHandle> {
  const handle = await startRedis();
  closers.push(() => handle.stop());
  return handle;
}

const data = (runId: string) => ({
  tenantId: 'acme',
  runId,
  calls: [{ id: 'toolu_1', name: 'send_email', input: { to: 'ada@example.com' } }],
});

describe('a receipts Redis on a refused port (ioredis, as the README makes it)', () => {
  it('fails processor.ready() with redis.unavailable naming the URL, its password masked', async () => {
    const port = await freePort();
    const url = `redis://:s3cret@127.0.0.1:${port}`;
    const processor = withToolReceipts({ redis: readmeClient(url), tools: [emailTool([])], logger: silent });
    const started = performance.now();
    const error = await processor.ready().then(
      () => undefined,
      (e: unknown) => e,
    );
    const elapsedMs = performance.now() - started;
    expect(error).toBeInstanceOf(ReceiptsRedisUnavailableError);
    expect(error).toMatchObject({ code: 'redis.unavailable', address: `redis://:***@127.0.0.1:${port}` });
    expect((error as Error).message).toMatch(
      new RegExp(`^the receipts Redis at redis://:\\*\\*\\*@127\\.0\\.0\\.1:${port} could not be reached: PING was not sent \\(`),
    );
    expect((error as Error).message).not.toContain('s3cret');
    // Within the receipts' deadline (commandTimeoutMs, 5 s by default): never the wait of a job, nor a pass.
    expect(elapsedMs).toBeGreaterThanOrEqual(4_900);
    expect(elapsedMs).toBeLessThan(9_000);
  });

  it('fails a claim as never sent at the deadline: redis.unavailable, sent: false, nothing released', async () => {
    const port = await freePort();
    const redis = readmeClient(`redis://127.0.0.1:${port}`, { commandTimeout: 1_500 });
    const processor = withToolReceipts({ redis, tools: [emailTool([])], logger: silent, commandTimeoutMs: 1_500 });
    const started = performance.now();
    const error = await processor(testJob(data('run-refused')).job, 'token').then(
      () => undefined,
      (e: unknown) => e,
    );
    const elapsedMs = performance.now() - started;
    expect(error).toBeInstanceOf(RedisConnectionLostError);
    expect(error).toMatchObject({ code: 'redis.unavailable', step: 'claim', tool: 'send_email', sent: false, releases: [] });
    expect((error as Error).message).toMatch(
      / was not sent \(not sent within 1500 ms: the client had no connection to Redis\), so it did not run$/,
    );
    expect((error as Error).message).not.toContain('whether it ran is unknown');
    expect(elapsedMs).toBeLessThan(5_000); // no release retries after it
  });
});

describe.skipIf(!faultTestsSupported())('a receipts Redis that comes and goes', () => {
  it('runs a claim held while ioredis reconnects once the server is back within the deadline, once', async () => {
    const handle = await server();
    const redis = readmeClient(handle.url);
    const sent: string[] = [];
    const processor = withToolReceipts({ redis, prefix: handle.prefix, tools: [emailTool(sent)], logger: silent });
    await processor.ready();
    await handle.kill();
    for (let waited = 0; redis.status === 'ready' && waited < 5_000; waited += 20) await new Promise((r) => setTimeout(r, 20));
    const delivery = processor(testJob(data('run-back')).job, 'token');
    await new Promise((r) => setTimeout(r, 300));
    await handle.restart();
    expect((await delivery).results).toEqual([expect.objectContaining({ outcome: 'executed' })]);
    expect(sent).toEqual(['ada@example.com']);
    const key = {
      tenantId: 'acme',
      runId: 'run-back',
      toolName: 'send_email',
      argsHash: await toolCallArgsHash({ to: 'ada@example.com' }),
    };
    expect(await processor.store.inspect(key)).toMatchObject({ status: 'completed', attempts: 1 });
  });

  it('loads the scripts at ready(), and on node-redis fails ready() with redis.unavailable once the server is gone', async () => {
    const handle = await server();
    const url = handle.url.replace('redis://', 'redis://default:s3cret@');
    const client = createClient({ url });
    client.on('error', () => undefined);
    await client.connect();
    closers.push(async () => client.destroy());
    const redis = client as unknown as RedisConnection;
    await client.sendCommand(['SCRIPT', 'FLUSH']);
    await withToolReceipts({ redis, prefix: handle.prefix, tools: [emailTool([])], logger: silent }).ready();
    expect(await client.sendCommand(['SCRIPT', 'EXISTS', luaScript('claim-4.lua').sha])).toEqual([1]);

    await handle.kill();
    const processor = withToolReceipts({ redis, prefix: handle.prefix, tools: [emailTool([])], logger: silent, commandTimeoutMs: 1_000 });
    const error = await processor.ready().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'redis.unavailable', address: url.replace(':s3cret@', ':***@') });
    expect((error as Error).message).toContain(`the receipts Redis at ${url.replace(':s3cret@', ':***@')} could not be reached: PING `);
    expect((error as Error).message).not.toContain('s3cret');
  });
});
