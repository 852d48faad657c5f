/**
 * `receiptLayout`, wherever a keyspace is made from options: 2, 4 or 5, and
 * anything else refused where it is given with `options.invalid` naming it.
 * The layout asked for reaches the claims the entry point makes.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { InvalidOptionsError } from '../../src/core/options.js';
import { defineTool, reconcileAmbiguous, withToolReceipts } from '../../src/bullmq/index.js';
import { ReceiptsKeyspace, ReceiptStore } from '../../src/redis/index.js';
import { freshKey, useRedis } from '../support/redis-fixture.js';

const redis = useRedis();
const tool = defineTool({ name: 'notify', input: z.object({}), effect: 'opaque', destructive: false, execute: () => 'ok' });
const WRONG: readonly unknown[] = [3, 1, 0, 6, '4', '5', '2', 4.5, null, true, [4], { layout: 4 }];

describe('receiptLayout', () => {
  it.each(WRONG)('refuses %j with options.invalid naming it, in every entry point', async (receiptLayout) => {
    const base = { redis: redis.connect(), prefix: redis.handle().prefix };
    const refused = [
      () => new ReceiptStore({ ...base, receiptLayout } as never),
      () => ReceiptsKeyspace.open({ ...base, receiptLayout } as never),
      () => withToolReceipts({ ...base, tools: [tool], receiptLayout } as never),
    ];
    for (const make of refused) {
      expect(make).toThrow(InvalidOptionsError);
      expect(() => make()).toThrow(expect.objectContaining({ code: 'options.invalid', option: 'receiptLayout' }));
    }
    await expect(reconcileAmbiguous({ ...base, tools: [tool], receiptLayout } as never)).rejects.toMatchObject({
      code: 'options.invalid',
      option: 'receiptLayout',
    });
  });

  it('takes 2, 4 and 5, and the claims of the store or the worker made with it write that layout', async () => {
    const base = { redis: redis.connect(), prefix: redis.handle().prefix };
    for (const receiptLayout of [2, 4, 5] as const) {
      for (const store of [
        new ReceiptStore({ ...base, receiptLayout }),
        withToolReceipts({ ...base, tools: [tool], receiptLayout }).store,
      ]) {
        const key = freshKey();
        await store.claim(key, { effect: 'opaque' });
        expect(await redis.connect().hget(store.redisKey(key), 'schema')).toBe(String(receiptLayout));
      }
    }
    const key = freshKey();
    const byDefault = new ReceiptStore(base);
    await byDefault.claim(key, { effect: 'opaque' });
    // The compact layout (5) is the default: see docs/upgrading.md for a fleet still running the release before it.
    expect(await redis.connect().hget(byDefault.redisKey(key), 'schema')).toBe('5');
  });
});
