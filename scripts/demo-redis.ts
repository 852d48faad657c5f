/**
 * A Redis for the runnable scripts (the demo, the agent loop): REDIS_URL if
 * set, else a throwaway redis-server on a free port, else it asks for
 * `docker compose up -d` and exits. It says which one it uses (a URL's
 * password is not printed).
 */
import { findOnPath } from '../test/support/redis-process.js';
import { startRedis, type RedisHandle } from '../test/support/redis.js';

export async function redisForScript(script: string): Promise<{ url: string; stop: () => Promise<void> }> {
  if (process.env.REDIS_URL) {
    console.log(`Redis: ${withoutPassword(process.env.REDIS_URL)} (from REDIS_URL; nothing there is flushed)`);
    return { url: process.env.REDIS_URL, stop: async () => undefined };
  }
  if (!findOnPath('redis-server')) {
    console.error(`No Redis: run \`docker compose up -d\` and then \`REDIS_URL=redis://127.0.0.1:6379 npm run ${script}\`.`);
    process.exit(2);
  }
  const handle: RedisHandle = await startRedis();
  console.log(`Redis: a throwaway redis-server at ${handle.url}, removed at the end (set REDIS_URL to use your own)`);
  return { url: handle.url, stop: () => handle.stop() };
}

/** The URL with any password replaced by `***`. */
function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(an unparseable REDIS_URL)';
  }
}
