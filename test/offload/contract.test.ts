import { describe, it } from 'vitest';
import { InMemoryToolResultStore } from '../../src/offload/memory-store.js';
import { toolResultStoreContract } from '../../src/offload/contract/index.js';

describe('toolResultStoreContract: InMemoryToolResultStore', () => {
  for (const c of toolResultStoreContract()) {
    it(c.name, async (ctx) => {
      if ((await c.run(() => new InMemoryToolResultStore())) === 'skipped') ctx.skip();
    });
  }
});
