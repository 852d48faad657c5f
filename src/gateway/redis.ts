/**
 * The gateway's Redis connections, for BullMQ and the receipts: ioredis
 * clients that ride out a Redis restart (BullMQ needs
 * `maxRetriesPerRequest: null`). ioredis is loaded when the gateway starts,
 * so nothing else of the package needs it.
 */
import type { Redis } from 'ioredis';
import { InvalidOptionsError } from '../core/options.js';

/** The connections one gateway process opened. */
export interface GatewayRedis {
  /** A new connection (BullMQ's workers and queue events each want their own). */
  connection(): Redis;
  /** Closes every connection it made. */
  close(): Promise<void>;
}

/** Connections to `url`, made as they are asked for; the CLI has made sure Redis answers before. */
export async function openRedis(url: string): Promise<GatewayRedis> {
  let RedisClient: typeof Redis;
  try {
    ({ Redis: RedisClient } = await import('ioredis'));
  } catch {
    throw new InvalidOptionsError('gateway', 'redis', 'the gateway needs the ioredis package for BullMQ: npm install ioredis');
  }
  const made: Redis[] = [];
  const connection = (): Redis => {
    const redis = new RedisClient(url, { maxRetriesPerRequest: null });
    redis.on('error', () => undefined); // it reconnects; commands wait meanwhile
    made.push(redis);
    return redis;
  };
  const close = async () => {
    await Promise.all(made.map((redis) => redis.quit().catch(() => redis.disconnect())));
  };
  return { connection, close };
}
