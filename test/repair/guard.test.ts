import { describe, expect, it } from 'vitest';
import { destructiveMatcher, guardReshaped } from '../../src/repair/index.js';
import { message, text, toolUse } from './fixtures.js';

const isDestructive = destructiveMatcher(['delete_file']);
const original = message(text('Looking it up.'), toolUse('t1', 'search', { query: 1 }), toolUse('t2', 'fetch', {}));

describe('guardReshaped', () => {
  it('accepts a candidate that changes only inputs', () => {
    const candidate = message(text('Looking it up.'), toolUse('t1', 'search', { query: '1' }), toolUse('t2', 'fetch', { baseUrl: 'x' }));
    expect(guardReshaped(original, candidate, isDestructive)).toBeNull();
  });

  it('accepts an identical candidate and ignores key order', () => {
    const candidate = { content: [...original.content], role: 'assistant' as const };
    expect(guardReshaped(original, candidate, isDestructive)).toBeNull();
  });

  it.each([
    ['an added tool_use', message(...original.content, toolUse('t3', 'search', { query: 'x' }))],
    ['a dropped tool_use', message(original.content[0]!, original.content[1]!)],
    ['reordered blocks', message(original.content[0]!, original.content[2]!, original.content[1]!)],
    ['a renamed tool', message(original.content[0]!, toolUse('t1', 'fetch', {}), original.content[2]!)],
    ['a re-pointed id', message(original.content[0]!, toolUse('t9', 'search', { query: '1' }), original.content[2]!)],
    ['an edited text block', message(text('Something else.'), original.content[1]!, original.content[2]!)],
    ['an inserted text block', message(original.content[0]!, text('extra'), original.content[1]!, original.content[2]!)],
    ['a tool_use turned into text', message(original.content[0]!, text('t1'), original.content[2]!)],
    [
      'an extra field on a tool_use',
      message(original.content[0]!, { ...toolUse('t1', 'search', {}), cache_control: {} }, original.content[2]!),
    ],
    ['another role', { ...original, role: 'user' }],
    ['an extra top-level field', { ...original, stop_reason: 'end_turn' }],
  ])('fails %s', (_label, candidate) => {
    expect(guardReshaped(original, candidate, isDestructive)).toBe('failed');
  });

  it.each([null, 'text', {}, { role: 'assistant' }, { role: 'assistant', content: 'x' }])('fails a malformed candidate %#', (candidate) => {
    expect(guardReshaped(original, candidate, isDestructive)).toBe('failed');
  });

  it('refuses any candidate naming a destructive tool, before checking structure', () => {
    const renamed = message(original.content[0]!, toolUse('t1', 'DELETE_FILE', {}), original.content[2]!);
    expect(guardReshaped(original, renamed, isDestructive)).toBe('refused_destructive');
    const withDestructive = message(toolUse('d1', 'delete_file', { path: '/' }));
    expect(guardReshaped(withDestructive, withDestructive, isDestructive)).toBe('refused_destructive');
  });
});
