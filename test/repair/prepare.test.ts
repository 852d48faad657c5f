import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { normalizeToolInput, prepareToolInput, prepareToolInputAsync } from '../../src/repair/index.js';
import { deleteSchema, fetchSchema, searchSchema } from './fixtures.js';

const fetchTool = { name: 'fetch', schema: fetchSchema, aliases: { baseUrl: ['url'] } };

describe('prepareToolInput', () => {
  it('passes a valid input through, returning raw and parsed forms', () => {
    const result = prepareToolInput({ baseUrl: 'https://a' }, fetchTool);
    expect(result).toEqual({
      ok: true,
      input: { baseUrl: 'https://a' },
      parsed: { baseUrl: 'https://a', timeoutMs: 1000 },
      corrections: [],
    });
  });

  it('applies decoding, aliases and null-dropping, and lists each correction', () => {
    const raw = JSON.stringify({ url: 'https://a', headers: '{"x":"1"}', timeoutMs: null });
    const result = prepareToolInput(raw, fetchTool);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.input).toEqual({ baseUrl: 'https://a', headers: { x: '1' } });
    expect(result.parsed).toEqual({ baseUrl: 'https://a', headers: { x: '1' }, timeoutMs: 1000 });
    expect(result.corrections).toEqual([
      { kind: 'decoded', path: [] },
      { kind: 'decoded', path: ['headers'] },
      { kind: 'alias', from: 'url', to: 'baseUrl' },
      { kind: 'dropped_null', key: 'timeoutMs' },
    ]);
  });

  it('decodes a value that arrived under an alias', () => {
    const schema = z.object({ options: z.object({ deep: z.boolean() }) });
    const result = prepareToolInput({ opts: '{"deep":true}' }, { name: 't', schema, aliases: { options: ['opts'] } });
    expect(result).toMatchObject({ ok: true, input: { options: { deep: true } } });
  });

  it('keeps the raw input distinct from the parsed output', () => {
    const schema = z.object({ n: z.string().transform((s) => s.length) });
    expect(prepareToolInput({ n: 'abc' }, { name: 't', schema })).toMatchObject({ ok: true, input: { n: 'abc' }, parsed: { n: 3 } });
  });

  it('fails an input that stays invalid', () => {
    const result = prepareToolInput({ query: null }, { name: 'search', schema: searchSchema });
    expect(result).toMatchObject({ ok: false, reason: 'invalid', issues: [{ code: 'invalid_input', path: ['query'] }] });
  });

  it('refuses a destructive tool whose input stays invalid', () => {
    const result = prepareToolInput({ path: 1 }, { name: 'delete_file', schema: deleteSchema, destructive: true });
    expect(result).toMatchObject({ ok: false, reason: 'refused_destructive' });
  });

  it('still applies the deterministic corrections to a destructive tool', () => {
    const raw = '{"path":"/var/data/x","options":"{\\"recursive\\":false}"}';
    const result = prepareToolInput(raw, { name: 'delete_file', schema: deleteSchema, destructive: true });
    expect(result).toMatchObject({ ok: true, input: { path: '/var/data/x', options: { recursive: false } } });
  });

  it('fails a parameter given twice as an alias conflict, before validation', () => {
    const result = prepareToolInput({ url: 'a', baseUrl: 'b' }, fetchTool);
    expect(result).toEqual({
      ok: false,
      reason: 'alias_conflict',
      issues: [expect.objectContaining({ code: 'alias_conflict', toolName: 'fetch', path: ['baseUrl'] })],
      corrections: [],
    });
  });

  it('accepts anything for a tool without a schema', () => {
    expect(prepareToolInput('raw', { name: 'x', schema: null })).toEqual({ ok: true, input: 'raw', parsed: 'raw', corrections: [] });
  });
});

describe('prepareToolInputAsync', () => {
  const schema = z.object({ name: z.string().refine(async (s) => s !== 'taken', 'name is taken') });

  it('runs async refinements that a synchronous parse cannot', async () => {
    expect(prepareToolInput({ name: 'free' }, { name: 't', schema })).toMatchObject({ ok: false, reason: 'invalid' });
    expect(await prepareToolInputAsync({ name: 'free' }, { name: 't', schema })).toMatchObject({ ok: true, parsed: { name: 'free' } });
    expect(await prepareToolInputAsync({ name: 'taken' }, { name: 't', schema, destructive: true })).toMatchObject({
      ok: false,
      reason: 'refused_destructive',
      issues: [{ message: 'name is taken' }],
    });
  });

  it('applies the same corrections and alias conflicts', async () => {
    expect(await prepareToolInputAsync('{"url":"a"}', fetchTool)).toMatchObject({ ok: true, input: { baseUrl: 'a' } });
    expect(await prepareToolInputAsync({ url: 'a', baseUrl: 'b' }, fetchTool)).toMatchObject({ ok: false, reason: 'alias_conflict' });
  });
});

describe('normalizeToolInput', () => {
  it('returns the very input when there is nothing to correct', () => {
    const input = { baseUrl: 'a' };
    expect(normalizeToolInput(input, fetchTool).input).toBe(input);
  });

  it('is idempotent', () => {
    const once = normalizeToolInput('{"url":"a","timeoutMs":null,"headers":"{}"}', fetchTool);
    expect(normalizeToolInput(once.input, fetchTool)).toEqual({ input: once.input, corrections: [] });
  });
});
