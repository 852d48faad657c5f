import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { DEFAULT_TOOL_RESULT_CHARS, stringifyToolResult, unwrapToolResultForLlm } from '../../src/offload/shaping.js';

describe('stringifyToolResult', () => {
  it('passes strings through and writes other values as JSON', () => {
    expect(DEFAULT_TOOL_RESULT_CHARS).toBe(100_000);
    expect(stringifyToolResult('as is')).toBe('as is');
    expect(stringifyToolResult({ a: [1, 'x', null] })).toBe('{"a":[1,"x",null]}');
    expect(stringifyToolResult({ a: 1 }, 2)).toBe('{\n  "a": 1\n}');
    expect(stringifyToolResult(12n)).toBe('"12"');
    expect(stringifyToolResult(undefined)).toBe('undefined');
    expect(stringifyToolResult(() => 1)).toContain('=>');
    expect(stringifyToolResult(Symbol('s'))).toBe('Symbol(s)');
  });

  it('marks cycles and still writes shared, acyclic references in full', () => {
    const shared = { v: 1 };
    const node: Record<string, unknown> = { name: 'root', left: shared, right: shared };
    node.self = node;
    node.list = [node, { back: node }];
    expect(JSON.parse(stringifyToolResult(node))).toEqual({
      name: 'root',
      left: { v: 1 },
      right: { v: 1 },
      self: '[Circular]',
      list: ['[Circular]', { back: '[Circular]' }],
    });
  });

  it('falls back to String() when toJSON throws, and never throws itself', () => {
    const bad = {
      toJSON() {
        throw new Error('no');
      },
      toString: () => 'bad value',
    };
    expect(stringifyToolResult(bad)).toBe('bad value');
    const worse = Object.create(null) as object;
    Object.defineProperty(worse, 'x', {
      enumerable: true,
      get() {
        throw new Error('getter');
      },
    });
    expect(stringifyToolResult(worse)).toBe('[object Object]');
  });

  it('property: equals JSON.stringify on acyclic JSON values', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        if (typeof v === 'string') return;
        expect(stringifyToolResult(v)).toBe(JSON.stringify(v));
      }),
      { numRuns: 1000 },
    );
  });
});

describe('unwrapToolResultForLlm', () => {
  it('returns the value of a success envelope and leaves everything else alone', () => {
    expect(unwrapToolResultForLlm({ success: true, value: { rows: 3 } })).toEqual({ rows: 3 });
    expect(unwrapToolResultForLlm({ __type: 'result', success: true, value: 'ok' })).toBe('ok');
    const inner = { success: true, value: 1 };
    expect(unwrapToolResultForLlm({ success: true, value: inner })).toBe(inner);
    for (const v of [
      { success: false, error: 'boom' },
      { success: true, value: 1, extra: 2 },
      { success: true },
      { success: 'true', value: 1 },
      [true, 1],
      'text',
      null,
      new (class {
        success = true;
        value = 1;
      })(),
    ]) {
      expect(unwrapToolResultForLlm(v)).toBe(v);
    }
  });
});
