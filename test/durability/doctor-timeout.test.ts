/**
 * `checkRedisForReceipts` at a worker's start, when Redis is not there: it
 * ends within its `timeoutMs` (default 5 s) with `redis.unreachable`,
 * instead of waiting out ioredis' reconnects and retries (about 76 s with
 * ioredis' defaults), both for a port nothing listens on and for a server
 * that accepted the connection and then froze (SIGSTOP). The bounds asserted
 * are generous: what matters is that the check stops, not how fast.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { ToolReceiptsError } from '../../src/core/errors.js';
import { checkRedisForReceipts } from '../../src/redis/index.js';
import { freePort, LOOPBACK } from '../support/ports.js';
import { startRedis, type RedisHandle } from '../support/redis.js';

const clients: Redis[] = [];
const servers: RedisHandle[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.disconnect();
  for (const s of servers.splice(0)) {
    await s.resume().catch(() => undefined);
    await s.stop();
  }
});

/** A client with ioredis' defaults (reconnects forever, 20 retries per command, an offline queue). */
function defaultClient(port: number): Redis {
  const client = new Redis({ host: LOOPBACK, port, lazyConnect: false });
  client.on('error', () => undefined); // refused connections are the point here
  clients.push(client);
  return client;
}

/** How the check ended and how long it took. */
async function timedCheck(run: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = performance.now();
  const error = await run().then(
    () => undefined,
    (e: unknown) => e,
  );
  return { error, ms: performance.now() - started };
}

function expectUnreachable(error: unknown): void {
  expect(error).toBeInstanceOf(ToolReceiptsError);
  expect((error as ToolReceiptsError).code).toBe('redis.unreachable');
  expect((error as Error).message).toMatch(/^checkRedisForReceipts could not reach Redis: /);
}

describe('checkRedisForReceipts when Redis cannot be reached', () => {
  it('a port nothing listens on: redis.unreachable after timeoutMs, not after the client gives up', async () => {
    const redis = defaultClient(await freePort());
    const { error, ms } = await timedCheck(() => checkRedisForReceipts(redis, { timeoutMs: 1000 }));
    expectUnreachable(error);
    expect((error as Error).message).toContain('no answer within 1000 ms');
    expect(ms).toBeGreaterThanOrEqual(900);
    expect(ms).toBeLessThan(15_000);
  }, 30_000);

  it('the default limit is a few seconds', async () => {
    const redis = defaultClient(await freePort());
    const { error, ms } = await timedCheck(() => checkRedisForReceipts(redis));
    expectUnreachable(error);
    expect((error as Error).message).toContain('no answer within 5000 ms');
    expect(ms).toBeLessThan(20_000);
  }, 40_000);

  it('a client that fails fast: redis.unreachable at once, with the connection error', async () => {
    const redis = new Redis({
      host: LOOPBACK,
      port: await freePort(),
      lazyConnect: true,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    redis.on('error', () => undefined);
    clients.push(redis);
    const { error, ms } = await timedCheck(() => checkRedisForReceipts(redis, { timeoutMs: 10_000 }));
    expectUnreachable(error);
    expect(ms).toBeLessThan(8_000);
  }, 30_000);

  it('a server frozen (SIGSTOP) after the client connected: redis.unreachable after timeoutMs', async (ctx) => {
    const server = await startRedis();
    servers.push(server);
    if (!server.controllable) ctx.skip();
    const redis = defaultClient(server.port);
    await redis.ping();
    await server.pause();
    const { error, ms } = await timedCheck(() => checkRedisForReceipts(redis, { timeoutMs: 1000 }));
    expectUnreachable(error);
    expect(ms).toBeLessThan(15_000);
    // Once the server answers again the same client gets a report: the timed-out check left nothing behind.
    await server.resume();
    const report = await checkRedisForReceipts(redis, { timeoutMs: 10_000 });
    expect(report.findings.length).toBeGreaterThan(0);
  }, 40_000);

  it('a server that answers is reported on as before', async () => {
    const server = await startRedis();
    servers.push(server);
    const redis = defaultClient(server.port);
    const report = await checkRedisForReceipts(redis, { timeoutMs: 10_000 });
    expect(report.findings.map((f) => f.check)).toContain('eviction');
  });

  it.each([
    [{ timeoutMs: 0 }, 'timeoutMs', 'got 0'],
    [{ timeoutMs: Number.NaN }, 'timeoutMs', 'got NaN'],
    [{ timeoutMs: -1 }, 'timeoutMs', 'got -1'],
    [{ timeoutMs: 2 ** 31 }, 'timeoutMs', 'got 2147483648'],
    [{ timeout: 1000 }, 'timeout', 'did you mean `timeoutMs`?'],
    [{ durability: { replicas: -1 } }, 'durability.replicas', 'got -1'],
  ])('refuses %j with options.invalid naming %s', async (options, option, said) => {
    const redis = defaultClient(await freePort());
    const error = await checkRedisForReceipts(redis, options as never).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'options.invalid', option });
    expect((error as Error).message).toContain(said);
  });
});
