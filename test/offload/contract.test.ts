import { afterAll, beforeAll, describe, it } from 'vitest';
import { Redis } from 'ioredis';
import { InMemoryToolResultStore } from '../../src/offload/memory-store.js';
import { RedisToolResultStore } from '../../src/offload/redis-store.js';
import { toolResultStoreContract, type ToolResultStoreFactory } from '../../src/offload/contract/index.js';
import { startRedis, type RedisHandle } from '../support/redis.js';

function runContract(makeStore: ToolResultStoreFactory): void {
  for (const c of toolResultStoreContract()) {
    it(c.name, async (ctx) => {
      if ((await c.run(makeStore)) === 'skipped') ctx.skip();
    });
  }
}

describe('toolResultStoreContract: InMemoryToolResultStore', () => {
  runContract(() => new InMemoryToolResultStore());
});

describe('toolResultStoreContract: RedisToolResultStore', () => {
  let handle: RedisHandle;
  let redis: Redis;
  let stores = 0;

  beforeAll(async () => {
    handle = await startRedis();
    redis = new Redis(handle.url, { maxRetriesPerRequest: 1 });
  });
  afterAll(async () => {
    redis?.disconnect();
    await handle?.stop();
  });

  // A fresh prefix per case: deleteBySession counts unowned entries store-wide.
  runContract(() => new RedisToolResultStore({ redis, prefix: `${handle.prefix}:c${++stores}` }));
});
