import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeDoubleEncodedInputs, guardReshaped, type AssistantMessage } from '../../src/repair/index.js';
import { assistantMessage, searchInput } from './arbitraries.js';
import { tools } from './fixtures.js';

const RUNS = { numRuns: 1000 };
const inputs = fc.oneof(searchInput, fc.jsonValue());

describe('decodeDoubleEncodedInputs properties', () => {
  it('is exercised: the generated messages often contain something to decode', () => {
    const samples = fc.sample(assistantMessage(inputs), { numRuns: 500, seed: 7 });
    const decoded = samples.filter((m) => decodeDoubleEncodedInputs(m, tools) !== null).length;
    expect(decoded).toBeGreaterThan(100);
  });

  it('keeps blocks, order, ids, names and every non-tool block', () => {
    fc.assert(
      fc.property(assistantMessage(inputs), (original) => {
        const decoded = decodeDoubleEncodedInputs(original, tools);
        if (decoded === null) return;
        expect(decoded.role).toBe(original.role);
        expect(decoded.content).toHaveLength(original.content.length);
        decoded.content.forEach((block, i) => {
          const before = original.content[i]!;
          if (before.type !== 'tool_use') {
            expect(block).toBe(before);
            return;
          }
          expect(block.type).toBe('tool_use');
          expect(block.id).toBe(before.id);
          expect(block.name).toBe(before.name);
        });
        expect(guardReshaped(original, decoded, () => false)).toBeNull();
      }),
      RUNS,
    );
  });

  it('is idempotent', () => {
    fc.assert(
      fc.property(assistantMessage(inputs), (original) => {
        const once = decodeDoubleEncodedInputs(original, tools) ?? original;
        expect(decodeDoubleEncodedInputs(once, tools)).toBeNull();
      }),
      RUNS,
    );
  });

  it('never mutates the message it is given', () => {
    fc.assert(
      fc.property(assistantMessage(inputs), (original) => {
        const snapshot: AssistantMessage = structuredClone(original);
        decodeDoubleEncodedInputs(original, tools);
        expect(original).toEqual(snapshot);
      }),
      RUNS,
    );
  });

  it('decodes only strings, into objects or arrays whose JSON text they were', () => {
    fc.assert(
      fc.property(assistantMessage(inputs), (original) => {
        const decoded = decodeDoubleEncodedInputs(original, tools);
        if (decoded === null) return;
        decoded.content.forEach((block, i) => {
          const before = original.content[i]!;
          if (block.type === 'tool_use') expect(reencode(block.input, before.input)).toEqual(before.input);
        });
      }),
      RUNS,
    );
  });
});

/** Undoes decoding: wherever `before` held a string and `after` holds structure, put the JSON text back. */
function reencode(after: unknown, before: unknown): unknown {
  if (typeof before === 'string' && typeof after === 'object' && after !== null) {
    const parsed: unknown = JSON.parse(before);
    expect(reencode(after, parsed)).toEqual(parsed);
    return before;
  }
  if (Array.isArray(after) && Array.isArray(before)) return after.map((v, i) => reencode(v, before[i]));
  if (typeof after === 'object' && after !== null && typeof before === 'object' && before !== null) {
    const b = before as Record<string, unknown>;
    return Object.fromEntries(Object.entries(after).map(([k, v]) => [k, reencode(v, b[k])]));
  }
  return after;
}
