import { beforeAll, describe, it } from 'vitest';
import type { RedisConnection } from '../../src/redis/connection/connection.js';
import { InMemoryToolResultStore } from '../../src/offload/memory-store.js';
import { RedisToolResultStore } from '../../src/offload/redis-store.js';
import { toolResultStoreContract, type ToolResultStoreFactory } from '../../src/offload/contract/index.js';
import { useRedis } from '../support/redis-fixture.js';

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
  const fixture = useRedis();
  let redis: RedisConnection;
  let stores = 0;

  beforeAll(() => {
    redis = fixture.client();
  });

  // A fresh prefix per case: deleteBySession counts unowned entries store-wide.
  runContract(() => new RedisToolResultStore({ redis, prefix: `${fixture.handle().prefix}:c${++stores}` }));
});
