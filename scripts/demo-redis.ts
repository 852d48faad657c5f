/**
 * A Redis for the runnable scripts (the demo, the agent loop): REDIS_URL if
 * set, else a throwaway redis-server on a free port, else it asks for
 * `docker compose up -d` and exits.
 */
import { findOnPath } from '../test/support/redis-process.js';
import { startRedis, type RedisHandle } from '../test/support/redis.js';

export async function redisForScript(script: string): Promise<{ url: string; stop: () => Promise<void> }> {
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL, stop: async () => undefined };
  if (!findOnPath('redis-server')) {
    console.error(`No Redis: run \`docker compose up -d\` and then \`REDIS_URL=redis://127.0.0.1:6379 npm run ${script}\`.`);
    process.exit(2);
  }
  const handle: RedisHandle = await startRedis();
  return { url: handle.url, stop: () => handle.stop() };
}
