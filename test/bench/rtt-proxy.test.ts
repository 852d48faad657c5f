import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { connect } from 'node:net';
import { startRedis, type RedisHandle } from '../support/redis.js';
import { startRttProxy, type RttProxy } from '../../bench/rtt-proxy.js';

/** The bench's network mode: every byte through the proxy is late by half the RTT each way, in order. */
describe('bench rtt proxy', () => {
  let handle: RedisHandle;
  let proxy: RttProxy;
  const RTT_MS = 4;

  beforeAll(async () => {
    handle = await startRedis();
    proxy = await startRttProxy({ host: handle.host, port: handle.port }, RTT_MS);
  });
  afterAll(async () => {
    await proxy?.stop();
    await handle?.stop();
  });

  it('adds at least the round trip asked for to every request and answer', async () => {
    const redis = new Redis(proxy.url(handle.url));
    try {
      await redis.ping();
      for (let i = 0; i < 10; i++) {
        const started = performance.now();
        expect(await redis.ping()).toBe('PONG');
        // Each half waits at least RTT/2 (timers only ever run late); no upper bound on a loaded machine.
        expect(performance.now() - started).toBeGreaterThanOrEqual(RTT_MS - 0.05);
      }
    } finally {
      redis.disconnect();
    }
  });

  it('keeps the order of a connection and every byte of a large value', async () => {
    const redis = new Redis(proxy.url(handle.url));
    const key = `${handle.prefix}:order`;
    try {
      const pipeline = redis.pipeline();
      for (let i = 0; i < 2000; i++) pipeline.incr(key);
      const replies = (await pipeline.exec()) ?? [];
      expect(replies.map(([, value]) => value)).toEqual(Array.from({ length: 2000 }, (_, i) => i + 1));
      const big = 'x'.repeat(3 * 1024 * 1024) + 'end';
      await redis.set(`${key}:big`, big);
      expect(await redis.get(`${key}:big`)).toBe(big);
    } finally {
      redis.disconnect();
    }
  });

  it('stops: afterwards its port takes no connection', async () => {
    const own = await startRttProxy({ host: handle.host, port: handle.port }, 1);
    const redis = new Redis(own.url(handle.url), { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    await redis.connect();
    expect(await redis.ping()).toBe('PONG');
    redis.disconnect();
    await own.stop();
    const refused = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port: own.port });
      socket.once('connect', () => {
        socket.destroy();
        resolve(false);
      });
      socket.once('error', () => resolve(true));
    });
    expect(refused).toBe(true);
  });
});
