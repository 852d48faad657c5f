import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseToolInput, validateMessage, zodToolUseValidator } from '../../src/repair/index.js';
import { message, text, toolUse, tools } from './fixtures.js';

const validator = zodToolUseValidator(tools);

describe('zodToolUseValidator', () => {
  it('accepts a valid call', () => {
    expect(validator.validate(toolUse('t1', 'search', { query: 'q' }))).toEqual([]);
  });

  it('reports an unknown tool', () => {
    expect(validator.validate(toolUse('t1', 'serch', {}))).toEqual([
      expect.objectContaining({ code: 'unknown_tool', toolName: 'serch', toolUseId: 't1', path: [] }),
    ]);
  });

  it('accepts anything for a tool without a schema', () => {
    expect(validator.validate(toolUse('t1', 'free_form', 'whatever'))).toEqual([]);
  });

  it('reports schema problems with their paths', () => {
    const issues = validator.validate(toolUse('t1', 'search', { query: 3, filters: { lang: 1 } }));
    expect(issues.map((i) => [i.code, i.path, i.toolUseId])).toEqual([
      ['invalid_input', ['query'], 't1'],
      ['invalid_input', ['filters', 'lang'], 't1'],
    ]);
  });
});

describe('parseToolInput', () => {
  it('returns the parsed output with defaults applied', () => {
    const schema = z.object({ n: z.number().default(5) });
    expect(parseToolInput(schema, {}, 'x')).toEqual({ ok: true, data: { n: 5 } });
  });

  it('turns a throwing schema into an issue', () => {
    const schema = z.string().transform(() => {
      throw new Error('boom');
    });
    const outcome = parseToolInput(schema, 'a', 'x');
    expect(outcome.ok).toBe(false);
    if (!outcome.ok) expect(outcome.issues[0]?.message).toContain('boom');
  });
});

describe('validateMessage', () => {
  it('validates every tool_use in order and ignores other blocks', () => {
    const msg = message(text('hi'), toolUse('a', 'search', {}), toolUse('b', 'nope', {}), toolUse('c', 'search', { query: 'q' }));
    expect(validateMessage(msg, validator).map((i) => [i.toolUseId, i.code])).toEqual([
      ['a', 'invalid_input'],
      ['b', 'unknown_tool'],
    ]);
  });

  it('reports a tool_use block without a string id or name', () => {
    const msg = message({ type: 'tool_use', id: 1, name: 'search', input: {} });
    expect(validateMessage(msg, validator)).toEqual([expect.objectContaining({ code: 'unknown_tool' })]);
  });
});
