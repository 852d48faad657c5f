import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { deepEqual } from '../../src/core/deep-equal.js';
import {
  destructiveMatcher,
  normalizeToolInput,
  prepareToolInput,
  repair,
  type AssistantMessage,
  type ContentBlock,
  type Reshaper,
} from '../../src/repair/index.js';
import { assistantMessage, maybeEncoded } from './arbitraries.js';
import { deleteSchema, tools } from './fixtures.js';

const RUNS = { numRuns: 1000 };
const isDestructive = destructiveMatcher(['delete_file']);

/** Inputs for the destructive fixture tool: sometimes valid, sometimes encoded, often wrong. */
const deleteInput: fc.Arbitrary<unknown> = fc.oneof(
  maybeEncoded(fc.record({ path: fc.string(), options: maybeEncoded(fc.record({ recursive: fc.boolean() })) }, { requiredKeys: [] })),
  fc.jsonValue(),
);

/** A generated message with a destructive call inserted somewhere. */
const withDestructiveCall = fc.tuple(assistantMessage(), deleteInput, fc.nat()).map(([msg, input, at]): AssistantMessage => {
  const index = at % (msg.content.length + 1);
  const block: ContentBlock = { type: 'tool_use', id: 'toolu_destructive', name: 'delete_file', input };
  return { ...msg, content: [...msg.content.slice(0, index), block, ...msg.content.slice(index)] };
});

describe('destructive calls', () => {
  it('never reach a reshaper, and are only ever emitted with the inputs the model wrote', async () => {
    await fc.assert(
      fc.asyncProperty(withDestructiveCall, async (msg) => {
        const reshaper: Reshaper = { reshape: vi.fn(async (request) => request.message) };
        const decision = await repair(msg, tools, { maxAttempts: 3, isDestructive, reshaper });
        expect(reshaper.reshape).not.toHaveBeenCalled();
        expect(['fixed', 'refused_destructive']).toContain(decision.outcome);
        if (decision.outcome !== 'fixed') return;
        expect(decision.via).not.toBe('reshaped');
        decision.message.content.forEach((block, i) => {
          const before = msg.content[i]!;
          if (block.type === 'tool_use' && isDestructive(String(block.name))) {
            const expected = normalizeToolInput(before.input, { schema: deleteSchema }).input;
            expect(deepEqual(block.input, expected)).toBe(true);
            expect(deleteSchema.safeParse(block.input).success).toBe(true);
          }
        });
      }),
      RUNS,
    );
  });

  it('are refused, never reported as merely invalid, by prepareToolInput', () => {
    fc.assert(
      fc.property(deleteInput, (input) => {
        const result = prepareToolInput(input, { name: 'delete_file', schema: deleteSchema, destructive: true });
        if (result.ok) expect(deleteSchema.safeParse(result.input).success).toBe(true);
        else expect(result.reason).toBe('refused_destructive');
      }),
      RUNS,
    );
  });
});
