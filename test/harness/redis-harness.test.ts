import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { pingOnce } from '../support/ports.js';
import { faultTestsSupported, startRedis, type RedisHandle, type StartRedisOptions } from '../support/redis.js';

const faults = faultTestsSupported();

describe('redis test harness', () => {
  const handles: RedisHandle[] = [];
  const clients: Redis[] = [];

  async function server(options?: StartRedisOptions): Promise<RedisHandle> {
    const handle = await startRedis(options);
    handles.push(handle);
    return handle;
  }

  function client(handle: RedisHandle): Redis {
    // No reconnect loop: each phase of a fault test opens its own client.
    const c = new Redis(handle.url, { maxRetriesPerRequest: 0, retryStrategy: () => null });
    c.on('error', () => undefined);
    clients.push(c);
    return c;
  }

  afterEach(async () => {
    for (const c of clients.splice(0)) c.disconnect();
    await Promise.all(handles.splice(0).map((h) => h.stop()));
  });

  it('gives every handle its own prefix and, for servers it starts, its own port', async () => {
    const a = await server();
    const b = await server();
    expect(a.prefix).toMatch(/^t[0-9a-f]+$/);
    expect(a.prefix).not.toBe(b.prefix);
    if (a.controllable && b.controllable) {
      expect(a.port).not.toBe(b.port);
      expect(a.url).toBe(`redis://127.0.0.1:${a.port}`);
    }
    expect(await client(a).ping()).toBe('PONG');
    expect(await client(b).ping()).toBe('PONG');
  });

  it('stop() is idempotent', async () => {
    const a = await server();
    await a.stop();
    await a.stop();
    if (a.controllable) expect(await pingOnce(a.host, a.port)).toBe(false);
  });

  it.skipIf(!faults)('keeps writes acknowledged before a SIGKILL when appendfsync is always', async () => {
    const redis = await server({ appendonly: true, appendfsync: 'always' });
    const before = client(redis);
    const keys = Array.from({ length: 50 }, (_, i) => `${redis.prefix}:k${i}`);
    for (const [i, key] of keys.entries()) await before.set(key, `v${i}`);
    await before.incrby(`${redis.prefix}:counter`, 7);

    const port = redis.port;
    await redis.kill();
    expect(await pingOnce(redis.host, port)).toBe(false);

    await redis.restart();
    expect(redis.port).toBe(port);
    const after = client(redis);
    expect(await after.mget(...keys)).toEqual(keys.map((_, i) => `v${i}`));
    expect(await after.get(`${redis.prefix}:counter`)).toBe('7');
  });

  it.skipIf(!faults)('loses everything on SIGKILL without appendonly (so the AOF test means something)', async () => {
    const redis = await server();
    await client(redis).set(`${redis.prefix}:gone`, '1');
    await redis.kill();
    await redis.restart();
    expect(await client(redis).exists(`${redis.prefix}:gone`)).toBe(0);
  });

  it.skipIf(!faults)('a paused server answers nothing until it is resumed', async () => {
    const redis = await server();
    const c = client(redis);
    expect(await c.ping()).toBe('PONG');

    await redis.pause();
    const pending = c.ping();
    const raced = await Promise.race([pending.then(() => 'answered'), new Promise<string>((r) => setTimeout(() => r('silent'), 500))]);
    expect(raced).toBe('silent');

    await redis.resume();
    expect(await pending).toBe('PONG');
    expect(await c.set(`${redis.prefix}:alive`, 'yes')).toBe('OK');
  });

  it.skipIf(faults)('refuses fault operations on a server it does not own', async () => {
    const redis = await server();
    expect(redis.controllable).toBe(false);
    expect(redis.uncontrollableReason).toMatch(/REDIS_URL/);
    await expect(redis.kill()).rejects.toThrow(/REDIS_URL/);
    await expect(redis.restart()).rejects.toThrow(/REDIS_URL/);
    await expect(redis.pause()).rejects.toThrow(/REDIS_URL/);
    await expect(redis.resume()).rejects.toThrow(/REDIS_URL/);
  });
});
