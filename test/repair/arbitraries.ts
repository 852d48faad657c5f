import fc from 'fast-check';
import type { AssistantMessage, ContentBlock } from '../../src/repair/index.js';

/** Tool names the property tests use; none of them is destructive. */
export const SAFE_NAMES = ['search', 'fetch', 'free_form', 'unknown_tool'] as const;

const opaqueBlock: fc.Arbitrary<ContentBlock> = fc.oneof(
  fc.record({ type: fc.constant('text'), text: fc.string() }),
  fc.record({ type: fc.constant('thinking'), thinking: fc.string(), signature: fc.string() }),
);

/** An assistant message mixing opaque blocks and tool_use blocks with unique ids. */
export function assistantMessage(input: fc.Arbitrary<unknown> = fc.jsonValue()): fc.Arbitrary<AssistantMessage> {
  const tool = fc.record({ name: fc.constantFrom(...SAFE_NAMES), input });
  const slot = fc.oneof(
    opaqueBlock.map((b) => ({ kind: 'opaque' as const, b })),
    tool.map((t) => ({ kind: 'tool' as const, t })),
  );
  return fc.array(slot, { maxLength: 8 }).map((slots) => ({
    role: 'assistant' as const,
    content: slots.map((slot, index): ContentBlock =>
      slot.kind === 'opaque' ? slot.b : { type: 'tool_use', id: `toolu_${index}`, name: slot.t.name, input: slot.t.input },
    ),
  }));
}

/** Sometimes replaces a value by its JSON text, as models do. */
export function maybeEncoded<T>(value: fc.Arbitrary<T>): fc.Arbitrary<T | string> {
  return fc.tuple(value, fc.boolean()).map(([v, encode]) => (encode ? JSON.stringify(v) : v));
}

/** Inputs for the `search` fixture tool, with fields (and the whole) sometimes double-encoded or malformed. */
export const searchInput: fc.Arbitrary<unknown> = maybeEncoded(
  fc.record(
    {
      query: fc.oneof(fc.string(), fc.constant('{"not":"decoded"}')),
      filters: fc.oneof(maybeEncoded(fc.record({ lang: fc.string(), year: fc.integer() })), fc.string(), fc.constant(null)),
      tags: fc.oneof(maybeEncoded(fc.array(fc.string())), fc.constant('{"a":1}'), fc.constant('[oops')),
      limit: fc.oneof(fc.integer(), fc.constant('[1]')),
    },
    { requiredKeys: [] },
  ),
);
