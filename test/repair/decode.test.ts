import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { decodeDoubleEncodedInputs, decodeToolInput } from '../../src/repair/index.js';
import { message, searchSchema, text, toolUse, tools } from './fixtures.js';

describe('decodeToolInput', () => {
  it('decodes a whole input sent as a JSON string of an object', () => {
    const result = decodeToolInput('{"query":"cats"}', searchSchema);
    expect(result.input).toEqual({ query: 'cats' });
    expect(result.decodedPaths).toEqual([[]]);
  });

  it('decodes a field that expects an object', () => {
    const result = decodeToolInput({ query: 'q', filters: '{"lang":"en"}' }, searchSchema);
    expect(result.input).toEqual({ query: 'q', filters: { lang: 'en' } });
    expect(result.decodedPaths).toEqual([['filters']]);
  });

  it('decodes a field that expects an array', () => {
    const result = decodeToolInput({ query: 'q', tags: '["a","b"]' }, searchSchema);
    expect(result.input).toEqual({ query: 'q', tags: ['a', 'b'] });
  });

  it('decodes fields inside a top level that was itself encoded', () => {
    const raw = JSON.stringify({ query: 'q', filters: JSON.stringify({ lang: 'en' }) });
    expect(decodeToolInput(raw, searchSchema).input).toEqual({ query: 'q', filters: { lang: 'en' } });
  });

  it('leaves a string whose parsed shape is not the expected one', () => {
    const input = { query: 'q', filters: '["en"]', tags: '{"a":1}' };
    const result = decodeToolInput(input, searchSchema);
    expect(result.input).toBe(input);
    expect(result.decodedPaths).toEqual([]);
  });

  it('leaves strings that are not JSON, and JSON null', () => {
    for (const filters of ['{lang: en}', 'null', '', '"{\\"lang\\":\\"en\\"}"']) {
      const input = { query: 'q', filters };
      expect(decodeToolInput(input, searchSchema).input).toBe(input);
    }
  });

  it('never decodes where a string is acceptable', () => {
    const schema = z.object({ note: z.union([z.string(), z.object({ a: z.number() })]), raw: z.string() });
    const input = { note: '{"a":1}', raw: '{"a":1}' };
    expect(decodeToolInput(input, schema).input).toBe(input);
  });

  it('never decodes where anything is acceptable', () => {
    const schema = z.object({ blob: z.unknown(), when: z.date() });
    const input = { blob: '{"a":1}', when: '[1]' };
    expect(decodeToolInput(input, schema).input).toBe(input);
  });

  it('decodes through nullable, optional and default wrappers', () => {
    const schema = z.object({
      a: z.object({ x: z.number() }).nullable(),
      b: z.array(z.number()).optional(),
      c: z.array(z.number()).default([]),
    });
    const result = decodeToolInput({ a: '{"x":1}', b: '[1]', c: '[2]' }, schema);
    expect(result.input).toEqual({ a: { x: 1 }, b: [1], c: [2] });
  });

  it('decodes record values, array elements and tuple members', () => {
    const schema = z.object({
      byName: z.record(z.string(), z.object({ n: z.number() })),
      list: z.array(z.object({ n: z.number() })),
      pair: z.tuple([z.object({ n: z.number() }), z.string()]),
    });
    const input = { byName: { x: '{"n":1}' }, list: ['{"n":2}'], pair: ['{"n":3}', '{"n":4}'] };
    const result = decodeToolInput(input, schema);
    expect(result.input).toEqual({ byName: { x: { n: 1 } }, list: [{ n: 2 }], pair: [{ n: 3 }, '{"n":4}'] });
    expect(result.decodedPaths).toEqual([
      ['byName', 'x'],
      ['list', 0],
      ['pair', 0],
    ]);
  });

  it('follows recursive schemas', () => {
    type Node = { name: string; children: Node[] };
    const node: z.ZodType<Node> = z.object({
      name: z.string(),
      get children() {
        return z.array(node);
      },
    });
    const input = { name: 'root', children: '[{"name":"leaf","children":"[]"}]' };
    expect(decodeToolInput(input, node).input).toEqual({ name: 'root', children: [{ name: 'leaf', children: [] }] });
  });

  it('does nothing without a schema and never mutates its input', () => {
    expect(decodeToolInput('{"a":1}', null).input).toBe('{"a":1}');
    const input = { query: 'q', filters: '{"lang":"en"}' };
    const copy = structuredClone(input);
    decodeToolInput(input, searchSchema);
    expect(input).toEqual(copy);
  });

  it('keeps a __proto__ key from model output as a plain key', () => {
    const schema = z.object({ meta: z.record(z.string(), z.object({ a: z.number() })) });
    const input = JSON.parse('{"meta":{"__proto__":"{\\"a\\":1}"}}') as unknown;
    const result = decodeToolInput(input, schema).input as { meta: Record<string, unknown> };
    expect(Object.getPrototypeOf(result.meta)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(result.meta, '__proto__')?.value).toEqual({ a: 1 });
  });
});

describe('decodeDoubleEncodedInputs', () => {
  it('returns null when nothing was double-encoded', () => {
    const msg = message(text('hi'), toolUse('t1', 'search', { query: 'q' }));
    expect(decodeDoubleEncodedInputs(msg, tools)).toBeNull();
  });

  it('replaces only the inputs that were decoded, keeping every other block', () => {
    const lead = text('calling');
    const untouched = toolUse('t2', 'search', { query: 'ok' });
    const msg = message(lead, toolUse('t1', 'search', { query: 'q', tags: '["x"]' }), untouched);
    const fixed = decodeDoubleEncodedInputs(msg, tools);
    expect(fixed).not.toBeNull();
    expect(fixed?.content[0]).toBe(lead);
    expect(fixed?.content[2]).toBe(untouched);
    expect(fixed?.content[1]).toEqual(toolUse('t1', 'search', { query: 'q', tags: ['x'] }));
    expect(msg.content[1]).toEqual(toolUse('t1', 'search', { query: 'q', tags: '["x"]' }));
  });

  it('leaves unknown tools and tools without a schema alone', () => {
    const msg = message(toolUse('t1', 'nope', '{"a":1}'), toolUse('t2', 'free_form', '{"a":1}'));
    expect(decodeDoubleEncodedInputs(msg, tools)).toBeNull();
  });
});
