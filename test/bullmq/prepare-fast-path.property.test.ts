/**
 * The wrapper's fast path for a call's input (parsed as sent, repair entered
 * only when that fails or could change it) gives exactly what the long way
 * (`repairInput`, normalization then validation) gives, for any input: the
 * same receipt identity (`rawInput`) and the same arguments.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type AnyToolDefinition } from '../../src/bullmq/tools/define-tool.js';
import { repairInput, type InputRepairOptions } from '../../src/bullmq/tools/input-repair.js';
import { inputPreparer } from '../../src/bullmq/tools/input.js';
import { fetchSchema, searchSchema } from '../repair/fixtures.js';
import { searchInput } from '../repair/arbitraries.js';

const tool = (name: string, input: z.ZodType, extra: { aliases?: Record<string, string[]>; destructive?: boolean } = {}) =>
  defineTool({ name, input, effect: 'opaque', destructive: extra.destructive ?? false, aliases: extra.aliases, execute: () => 'ok' });

const tools: AnyToolDefinition[] = [
  tool('search', searchSchema),
  tool('fetch', fetchSchema, { aliases: { baseUrl: ['url', 'base_url'] } }),
  tool('delete_file', z.object({ path: z.string(), options: z.object({ recursive: z.boolean() }).optional() }), { destructive: true }),
  // Wrappers that accept more than they show: a valid input may still be changed by the long way.
  tool('lenient', z.object({ filters: z.object({ lang: z.string() }).catch({ lang: 'en' }), note: z.string().optional() })),
  tool(
    'preprocessed',
    z.preprocess((v) => v, z.object({ limit: z.number().optional(), tags: z.array(z.string()).optional() })),
  ),
  tool('nullable', z.object({ q: z.string(), page: z.number().nullable().optional(), when: z.union([z.string(), z.number()]).optional() })),
  // The user's own checks, one of them asynchronous: such a schema is parsed with zod's async parse, never its sync one.
  tool('refined', z.object({ q: z.string().refine((q) => q.length % 2 === 0), page: z.number().int().min(0).optional() })),
  tool(
    'checked_async',
    z.object({ q: z.string(), path: z.string().optional() }).refine(async (v) => (await Promise.resolve(v.q)) !== 'forbidden'),
  ),
];
const options: InputRepairOptions = { isDestructive: (t) => t.destructive };
const prepare = inputPreparer(options, tools);
const abort = { signal: new AbortController().signal };

const inputs: fc.Arbitrary<unknown> = fc.oneof(
  searchInput,
  fc.jsonValue(),
  fc.record(
    {
      url: fc.string(),
      baseUrl: fc.string(),
      base_url: fc.string(),
      timeoutMs: fc.oneof(fc.integer(), fc.constant(null)),
      headers: fc.oneof(fc.dictionary(fc.string(), fc.string()), fc.constant('{"a":"b"}')),
    },
    { requiredKeys: [] },
  ),
  fc.record(
    {
      filters: fc.oneof(fc.constant('{"lang":"de"}'), fc.record({ lang: fc.string() }), fc.constant(null)),
      note: fc.oneof(fc.string(), fc.constant(null)),
      limit: fc.oneof(fc.integer(), fc.constant(null), fc.constant('[1]')),
      tags: fc.oneof(fc.array(fc.string()), fc.constant('["x"]')),
      q: fc.string(),
      page: fc.oneof(fc.integer(), fc.constant(null)),
      when: fc.oneof(fc.string(), fc.integer(), fc.constant('[1]')),
      path: fc.string(),
      options: fc.oneof(fc.constant('{"recursive":true}'), fc.record({ recursive: fc.boolean() })),
    },
    { requiredKeys: [] },
  ),
  fc.constant(undefined),
);

describe("the wrapper's fast path for a call's input", () => {
  it('gives the same rawInput and arguments as the long way, for every tool and any input', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...tools), inputs, async (t, input) => {
        const call = { id: 'toolu_1', name: t.name, input };
        expect(await prepare(call, t, abort)).toEqual(await repairInput(call, t, options, abort));
      }),
      { numRuns: 600 },
    );
  });

  it("runs a valid input of a plain schema with the very input the model sent as the receipt's identity", async () => {
    const input = { query: 'q', tags: ['a'] };
    const prepared = await prepare({ id: 'toolu_1', name: 'search', input }, tools[0]!, abort);
    expect(prepared).toMatchObject({ ok: true, args: { query: 'q', tags: ['a'] } });
    expect(prepared.ok && prepared.rawInput).toBe(input);
  });

  it("parses an input as sent whatever the schema's own checks are, an asynchronous one included", async () => {
    const byName = (name: string) => tools.find((t) => t.name === name)!;
    expect(await prepare({ id: 'toolu_1', name: 'refined', input: { q: 'ab', page: 2 } }, byName('refined'), abort)).toEqual({
      ok: true,
      rawInput: { q: 'ab', page: 2 },
      args: { q: 'ab', page: 2 },
    });
    expect(await prepare({ id: 'toolu_1', name: 'checked_async', input: { q: 'fine' } }, byName('checked_async'), abort)).toEqual({
      ok: true,
      rawInput: { q: 'fine' },
      args: { q: 'fine' },
    });
    expect(
      await prepare({ id: 'toolu_1', name: 'checked_async', input: { q: 'forbidden' } }, byName('checked_async'), abort),
    ).toMatchObject({
      ok: false,
    });
  });

  it('still renames an alias and decodes a double-encoded value the schema proves', async () => {
    const renamed = await prepare({ id: 'toolu_1', name: 'fetch', input: { url: 'https://x' } }, tools[1]!, abort);
    expect(renamed).toEqual({ ok: true, rawInput: { baseUrl: 'https://x' }, args: { baseUrl: 'https://x', timeoutMs: 1000 } });
    const decoded = await prepare({ id: 'toolu_1', name: 'search', input: { query: 'q', tags: '["a"]' } }, tools[0]!, abort);
    expect(decoded).toEqual({ ok: true, rawInput: { query: 'q', tags: ['a'] }, args: { query: 'q', tags: ['a'] } });
  });
});
