import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { DuplicateToolNameError, InvalidAliasError } from '../../src/repair/index.js';
import { defineTool, InvalidToolDefinitionError, toolListForModel, withToolReceipts } from '../../src/bullmq/index.js';
import { costOf, defineLimit, type Limit } from '../../src/limits/index.js';

const base = { input: z.object({ q: z.string() }), effect: 'opaque' as const, execute: () => 'ok' };

describe('defineTool', () => {
  it.each([
    ['no flags: MCP defaults', {}, { readOnly: false, destructive: true, idempotent: false, openWorld: true }],
    ['read-only hint', { annotations: { readOnlyHint: true } }, { readOnly: true, destructive: false, idempotent: true, openWorld: true }],
    [
      'destructiveHint false',
      { annotations: { destructiveHint: false, idempotentHint: true } },
      { readOnly: false, destructive: false, idempotent: true, openWorld: true },
    ],
    [
      'explicit flags win over hints',
      { destructive: false, idempotent: false, annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false } },
      { readOnly: false, destructive: false, idempotent: false, openWorld: false },
    ],
    [
      'explicit readOnly',
      { readOnly: true, annotations: { readOnlyHint: false } },
      { readOnly: true, destructive: false, idempotent: true, openWorld: true },
    ],
  ])('%s', (_label, flags, expected) => {
    const tool = defineTool({ name: 'search', ...base, ...flags });
    expect({ readOnly: tool.readOnly, destructive: tool.destructive, idempotent: tool.idempotent, openWorld: tool.openWorld }).toEqual(
      expected,
    );
    expect(Object.isFrozen(tool)).toBe(true);
  });

  it.each(['', 'has space', 'x'.repeat(65), 'dots.not.allowed', 'ünï'])('rejects the name %j', (name) => {
    expect(() => defineTool({ name, ...base })).toThrow(InvalidToolDefinitionError);
  });

  it('refuses an alias table that contradicts itself or the schema when the tool is defined (tool_args.invalid_alias)', () => {
    const input = z.object({ baseUrl: z.string(), endpoint: z.string().optional(), title: z.string().optional() });
    const spec = { name: 'fetch_page', input, effect: 'opaque', destructive: false, execute: () => 'ok' } as const;
    for (const [aliases, problem] of [
      [{ baseUrl: ['url'], endpoint: ['url'] }, /tool fetch_page: alias "url" is given to both "baseUrl" and "endpoint"/],
      [{ baseUrl: ['title'] }, /tool fetch_page: alias "title" of "baseUrl" is itself a parameter name/],
      [{ nosuch: ['x'] }, /tool fetch_page: "nosuch" has aliases but is not a parameter of the schema/],
    ] as const) {
      const refusal = (() => {
        try {
          defineTool({ ...spec, aliases });
          return undefined;
        } catch (error) {
          return error as InvalidAliasError;
        }
      })();
      expect(refusal).toBeInstanceOf(InvalidAliasError);
      expect(refusal!.code).toBe('tool_args.invalid_alias');
      expect(refusal!.message).toMatch(problem);
    }
    expect(defineTool({ ...spec, aliases: { baseUrl: ['url', 'base_url'] } }).aliases).toEqual({ baseUrl: ['url', 'base_url'] });
  });

  it('rejects a bad effect with a stable code', () => {
    try {
      defineTool({ name: 'x', ...base, effect: 'maybe' as never });
      throw new Error('expected a throw');
    } catch (error) {
      expect((error as InvalidToolDefinitionError).code).toBe('tool.invalid_definition');
    }
  });

  it.each([
    ['keyed without a window', { effect: 'keyed' }, /needs keyWindowMs/],
    ['keyed with a window of 0', { effect: 'keyed', keyWindowMs: 0 }, /needs keyWindowMs/],
    ['a window without keyed', { keyWindowMs: 1000 }, /keyWindowMs goes with effect "keyed"/],
    [
      'a reconcile on a resumable tool',
      { effect: 'resumable', reconcile: () => ({ status: 'unknown' }) },
      /resumable tool .* needs no reconcile/,
    ],
    ['a reconcile that is not a function', { reconcile: 'yes' }, /reconcile must be a function/],
    [
      'a reconcile timeout of 1.5 ms',
      { reconcile: () => ({ status: 'unknown' }), reconcileTimeoutMs: 1.5 },
      /reconcileTimeoutMs must be a positive integer/,
    ],
  ])('rejects %s, saying what to pass', (_label, spec, message) => {
    expect(() => defineTool({ name: 'x', ...base, ...(spec as object) } as never)).toThrow(message);
  });

  it('accepts a keyed tool with its window and a reconcile, and an opaque one with a reconcile', () => {
    const reconcile = () => ({ status: 'not_started' as const });
    expect(defineTool({ name: 'charge', ...base, effect: 'keyed', keyWindowMs: 86_400_000, reconcile })).toMatchObject({
      effect: 'keyed',
      keyWindowMs: 86_400_000,
    });
    expect(defineTool({ name: 'mail', ...base, reconcile, reconcileTimeoutMs: 500 }).reconcileTimeoutMs).toBe(500);
  });

  // The `@ts-expect-error` lines are checked by `npm run typecheck`: each must be a compile error.
  it('refuses effect "transactional" without a database, at compile time and at run time', () => {
    expect(() =>
      // @ts-expect-error a transactional tool needs `database`
      defineTool({ name: 'file_ticket', ...base, effect: 'transactional' }),
    ).toThrow(/effect "transactional" needs database/);
    const defined = defineTool({ name: 'search', ...base });
    // A tool already defined, spread into a new spec, is still taken as it is.
    expect(defineTool({ ...defined, name: 'search_again', parallel: true }).parallel).toBe(true);
  });

  it("keeps a limit's argument type: its cost must read the input of the tool it is given to", () => {
    const spend = defineLimit<{ cents: number }>({ name: 'spend', per: 'run', max: 100, windowMs: 60_000, cost: (args) => args.cents });
    const calls = defineLimit({ name: 'calls', per: 'tenant', max: 10, windowMs: 60_000 });
    const buy = defineTool({ name: 'buy', ...base, input: z.object({ cents: z.number() }), limits: [spend, calls] });
    // @ts-expect-error `spend` reads `cents`, which send_email's input has not
    defineTool({ name: 'send_email', ...base, input: z.object({ to: z.string() }), limits: [spend] });
    const checked: readonly Limit[] = [spend, calls]; // a list of limits of any arguments takes it
    expect(buy.limits).toEqual([spend, calls]);
    expect(costOf(checked[0]!, { cents: 42 })).toBe(42);
  });

  it('exports each tool as JSON Schema for the model', () => {
    const tool = defineTool({
      name: 'search',
      description: 'Find things.',
      ...base,
      input: z.object({ q: z.string(), limit: z.number().default(10) }),
    });
    const [entry] = toolListForModel([tool]);
    expect(entry).toMatchObject({ name: 'search', description: 'Find things.' });
    expect(entry!.input_schema).toMatchObject({ type: 'object', properties: { q: { type: 'string' } }, required: ['q'] });
  });

  it('refuses two tools with one name when building the processor', () => {
    const redis = new Redis({ lazyConnect: true });
    const a = defineTool({ name: 'dup', ...base });
    expect(() => withToolReceipts({ redis, tools: [a, a] })).toThrow(DuplicateToolNameError);
    redis.disconnect();
  });
});
