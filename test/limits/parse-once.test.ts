/**
 * Limits are parsed once per entry point: a definition handed to
 * `withToolReceipts` is read as often as `defineLimit` reads one, though the
 * options' schema and the worker's limits both take the list; a limit made
 * by `defineLimit` is not read again wherever it goes.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, withToolReceipts } from '../../src/bullmq/index.js';
import { defineLimit, type LimitDefinition } from '../../src/limits/index.js';
import { silent } from '../bullmq/fixture.js';

const redis = new Redis({ lazyConnect: true });
afterAll(() => redis.disconnect());

/** A definition whose every field counts its reads. */
function counted(name: string): { definition: LimitDefinition; reads: () => number } {
  let reads = 0;
  const fields: Record<string, unknown> = { name, per: 'tenant', max: 3, windowMs: 60_000 };
  const definition = {} as Record<string, unknown>;
  for (const [key, value] of Object.entries(fields)) {
    Object.defineProperty(definition, key, {
      enumerable: true,
      get: () => {
        reads++;
        return value;
      },
    });
  }
  return { definition: definition as unknown as LimitDefinition, reads: () => reads };
}

const tool = (limits?: LimitDefinition[]) =>
  defineTool({
    name: 'send',
    input: z.object({}),
    effect: 'opaque',
    destructive: false,
    ...(limits ? { limits } : {}),
    execute: () => 'sent',
  });

describe('limits parsed once', () => {
  it('a worker reads a plain definition as often as defineLimit does, from its own list or a tool’s', () => {
    const once = counted('once');
    defineLimit(once.definition);
    const perParse = once.reads();
    expect(perParse).toBeGreaterThan(0);

    const shared = counted('shared');
    withToolReceipts({ redis, tools: [tool()], limits: [shared.definition], logger: silent });
    expect(shared.reads()).toBe(perParse);

    const own = counted('own');
    withToolReceipts({ redis, tools: [tool([own.definition])], logger: silent });
    expect(own.reads()).toBe(perParse);
  });

  it('a limit defineLimit made is not read again by the tool or the worker', () => {
    const source = counted('made');
    const limit = defineLimit(source.definition);
    const afterDefine = source.reads();
    withToolReceipts({ redis, tools: [tool([limit])], logger: silent });
    withToolReceipts({ redis, tools: [tool()], limits: [limit], logger: silent });
    expect(source.reads()).toBe(afterDefine);
  });

  it('an array edited after it was checked is checked again', () => {
    const list: LimitDefinition[] = [{ name: 'a', per: 'tenant', max: 1, windowMs: 1000 }];
    withToolReceipts({ redis, tools: [tool()], limits: list, logger: silent });
    list.push({ name: 'a', per: 'tenant', max: 2, windowMs: 1000 });
    expect(() => withToolReceipts({ redis, tools: [tool()], limits: list, logger: silent })).toThrow(/limits\[1\]\.name/);
  });
});
