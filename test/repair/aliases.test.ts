import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { assertValidAliases, InvalidAliasError, toolArgumentsFor } from '../../src/repair/index.js';
import { fetchSchema } from './fixtures.js';

const tool = { schema: fetchSchema, aliases: { baseUrl: ['url', 'base_url'], timeoutMs: ['timeout'] } };

describe('toolArgumentsFor', () => {
  it('renames alias keys to their parameter, in place, and reports it', () => {
    const result = toolArgumentsFor({ url: 'https://a', timeout: 5, headers: {} }, tool);
    expect(result.args).toEqual({ baseUrl: 'https://a', timeoutMs: 5, headers: {} });
    expect(Object.keys(result.args as object)).toEqual(['baseUrl', 'timeoutMs', 'headers']);
    expect(result.corrections).toEqual([
      { from: 'url', to: 'baseUrl' },
      { from: 'timeout', to: 'timeoutMs' },
    ]);
    expect(result.conflict).toBeUndefined();
  });

  it('leaves arguments that use the parameter names alone', () => {
    const args = { baseUrl: 'x' };
    expect(toolArgumentsFor(args, tool)).toEqual({ args, corrections: [], dropped: [] });
  });

  it('reports two keys for one parameter as a conflict and changes nothing', () => {
    const args = { url: 'a', baseUrl: 'b', timeout: null };
    const result = toolArgumentsFor(args, tool);
    expect(result.conflict).toEqual({ param: 'baseUrl', keys: ['baseUrl', 'url'] });
    expect(result.args).toBe(args);
    expect(result.corrections).toEqual([]);
  });

  it('treats two aliases of one parameter as a conflict too', () => {
    expect(toolArgumentsFor({ url: 'a', base_url: 'b' }, tool).conflict).toEqual({ param: 'baseUrl', keys: ['url', 'base_url'] });
  });

  it('drops nulls of defaulted parameters after renaming', () => {
    const result = toolArgumentsFor({ url: 'a', timeout: null }, tool);
    expect(result.args).toEqual({ baseUrl: 'a' });
    expect(result.dropped).toEqual(['timeoutMs']);
  });

  it('takes a null of an optional parameter as not given: it clashes with no value under another key, in either order', () => {
    const schema = z.object({ baseUrl: z.string().optional() });
    const aliases = { baseUrl: ['url'] };
    for (const args of [
      { baseUrl: null, url: 'https://a' },
      { url: 'https://a', baseUrl: null },
    ]) {
      const result = toolArgumentsFor(args, { schema, aliases });
      expect(result.conflict).toBeUndefined();
      expect(result.args).toEqual({ baseUrl: 'https://a' });
    }
    const nullUnderAlias = toolArgumentsFor({ baseUrl: 'https://b', url: null }, { schema, aliases });
    expect(nullUnderAlias.conflict).toBeUndefined();
    expect(nullUnderAlias.args).toEqual({ baseUrl: 'https://b' });
    expect(nullUnderAlias.dropped).toEqual(['url']);
    // A parameter that takes null as a value is given by it: two keys are still a clash.
    const nullable = { schema: z.object({ baseUrl: z.string().nullable() }), aliases };
    expect(toolArgumentsFor({ baseUrl: null, url: 'https://a' }, nullable).conflict).toEqual({
      param: 'baseUrl',
      keys: ['baseUrl', 'url'],
    });
  });

  it('ignores ambiguous aliases instead of guessing', () => {
    const schema = z.object({ a: z.string().optional(), b: z.string().optional() });
    const aliases = { a: ['x', 'b'], b: ['x'] };
    expect(toolArgumentsFor({ x: '1', b: '2' }, { schema, aliases }).args).toEqual({ x: '1', b: '2' });
  });

  it('passes non-object arguments through', () => {
    expect(toolArgumentsFor('text', tool)).toEqual({ args: 'text', corrections: [], dropped: [] });
    expect(toolArgumentsFor(null, tool).args).toBeNull();
  });

  it('works without a schema', () => {
    expect(toolArgumentsFor({ url: 'a', x: null }, { schema: null, aliases: { baseUrl: ['url'] } }).args).toEqual({
      baseUrl: 'a',
      x: null,
    });
  });

  it('keeps a __proto__ key as a plain key', () => {
    const args = JSON.parse('{"__proto__":{"polluted":true},"url":"a"}') as Record<string, unknown>;
    const result = toolArgumentsFor(args, tool).args as Record<string, unknown>;
    expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.keys(result)).toEqual(['__proto__', 'baseUrl']);
  });
});

describe('assertValidAliases', () => {
  it('accepts a consistent table', () => {
    expect(() => assertValidAliases(fetchSchema, tool.aliases)).not.toThrow();
  });

  it('lists every problem in one error', () => {
    let caught: unknown;
    try {
      assertValidAliases(fetchSchema, { baseUrl: ['url', 'headers'], timeoutMs: ['url'], missing: ['m'] });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(InvalidAliasError);
    const error = caught as InvalidAliasError;
    expect(error.code).toBe('tool_args.invalid_alias');
    expect(error.problems).toHaveLength(3);
  });
});
