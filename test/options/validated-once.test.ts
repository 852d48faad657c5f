/**
 * Options are validated once per entry point: the entry point's schema
 * parses them, and the receipts keyspace it builds from them (its call,
 * reconcile and breaker parts, their durability waiter) reads the frozen
 * settings without parsing again. A parse enumerates the options' keys
 * (`Object.keys`, to refuse unknown ones), so a proxy that counts
 * enumerations counts the parses; nothing of the library is replaced.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, reconcileAmbiguous, withToolReceipts } from '../../src/bullmq/index.js';
import { BreakerStore, ReceiptsKeyspace, ReceiptStore, ReconcileStore } from '../../src/redis/index.js';
import { DurabilityWaiter } from '../../src/redis/durability/durability.js';
import { useRedis } from '../support/redis-fixture.js';

const redis = useRedis();

/** `value` behind a proxy that counts how often its keys are enumerated. */
function counted<T extends object>(value: T): { readonly value: T; readonly parses: () => number } {
  let enumerations = 0;
  const proxy = new Proxy(value, {
    ownKeys(target) {
      enumerations++;
      return Reflect.ownKeys(target);
    },
  });
  return { value: proxy, parses: () => enumerations };
}

const tool = defineTool({ name: 'notify', input: z.object({}), effect: 'opaque', destructive: false, execute: () => 'ok' });

describe('options validated once per entry point', () => {
  it('withToolReceipts parses its options and their durability once, for the store, the reconcile side and the breaker', () => {
    const durability = counted({ replicas: 1, timeoutMs: 500 });
    const options = counted({ redis: redis.connect(), prefix: redis.handle().prefix, tools: [tool], durability: durability.value });
    const processor = withToolReceipts(options.value);
    expect(options.parses()).toBe(1);
    expect(durability.parses()).toBe(1);
    expect(processor.store.durabilityOptions).toEqual({ replicas: 1, timeoutMs: 500, aof: false });
  });

  it('the reconcile sweep parses its options and their durability once', async () => {
    const durability = counted({ replicas: 1, timeoutMs: 500 });
    const options = counted({
      redis: redis.connect(),
      prefix: `${redis.handle().prefix}none:`,
      tools: [tool],
      durability: durability.value,
    });
    expect(await reconcileAmbiguous(options.value)).toEqual([]);
    expect(options.parses()).toBe(1);
    expect(durability.parses()).toBe(1);
  });

  it('each store made on its own, and a keyspace, parses its own options once', () => {
    const made = [
      (o: object) => new ReceiptStore(o as never),
      (o: object) => new ReconcileStore(o as never),
      (o: object) => new BreakerStore(o as never),
      (o: object) => ReceiptsKeyspace.open(o as never),
    ];
    for (const make of made) {
      const durability = counted({ replicas: 1 });
      const withDurability = make === made[2] ? {} : { durability: durability.value };
      const options = counted({ redis: redis.connect(), ...withDurability });
      make(options.value);
      expect(options.parses()).toBe(1);
      expect(durability.parses()).toBe(make === made[2] ? 0 : 1);
    }
  });

  it('one processor has one keyspace: one channel, so one durability waiter on its connection', () => {
    const processor = withToolReceipts({ redis: redis.connect(), tools: [tool], durability: { replicas: 1 } });
    const { keyspace } = processor;
    expect(keyspace.channel.durability).toBeInstanceOf(DurabilityWaiter);
    expect(keyspace.receipts).toBe(processor.store);
    expect(keyspace.breaker).toBe(processor.breaker);
    for (const part of [keyspace.receipts, keyspace.reconciles, keyspace.breaker]) expect(part.channel).toBe(keyspace.channel);
    expect(keyspace.settings).toSatisfy(Object.isFrozen);
    expect(keyspace.settings.durability).toSatisfy(Object.isFrozen);
  });
});
