import { describe, expect, it, vi } from 'vitest';
import { destructiveMatcher, prepareToolInput, repair, type Reshaper } from '../../src/repair/index.js';
import { fetchSchema, message, searchSchema, toolUse, tools } from './fixtures.js';

/** One test per malformation models are known to produce, through both entry points. */
const reshaper: Reshaper = { reshape: vi.fn(() => Promise.reject(new Error('the reshaper must not be needed'))) };
const deps = {
  maxAttempts: 2,
  isDestructive: destructiveMatcher(['delete_file']),
  reshaper,
  aliases: new Map([['fetch', { baseUrl: ['url'] }]]),
};
const search = { name: 'search', schema: searchSchema };
const fetchTool = { name: 'fetch', schema: fetchSchema, aliases: { baseUrl: ['url'] } };

describe('known model quirks', () => {
  it('an object argument sent as a JSON string', async () => {
    expect(prepareToolInput({ query: 'q', filters: '{"lang":"en"}' }, search)).toMatchObject({
      ok: true,
      input: { filters: { lang: 'en' } },
    });
    expect(prepareToolInput('{"query":"q"}', search)).toMatchObject({ ok: true, input: { query: 'q' } });
    const decision = await repair(message(toolUse('t', 'search', { query: 'q', filters: '{"lang":"en"}' })), tools, deps);
    expect(decision).toMatchObject({ outcome: 'fixed', via: 'normalized' });
  });

  it('an array argument sent as a JSON string', async () => {
    expect(prepareToolInput({ query: 'q', tags: '["a","b"]' }, search)).toMatchObject({ ok: true, input: { tags: ['a', 'b'] } });
    const decision = await repair(message(toolUse('t', 'search', { query: 'q', tags: '["a"]' })), tools, deps);
    expect(decision).toMatchObject({ outcome: 'fixed', message: { content: [{ input: { query: 'q', tags: ['a'] } }] } });
  });

  it('null for an optional or defaulted argument', async () => {
    const result = prepareToolInput({ query: 'q', filters: null, tags: null, limit: null }, search);
    expect(result).toMatchObject({ ok: true, input: { query: 'q' }, parsed: { query: 'q', tags: [] } });
    const decision = await repair(message(toolUse('t', 'search', { query: 'q', limit: null })), tools, deps);
    expect(decision).toMatchObject({ outcome: 'fixed', message: { content: [{ input: { query: 'q' } }] } });
  });

  it('null for a required argument is not papered over', () => {
    expect(prepareToolInput({ query: null }, search)).toMatchObject({ ok: false, reason: 'invalid' });
  });

  it('an alias key instead of the parameter name', async () => {
    expect(prepareToolInput({ url: 'https://a' }, fetchTool)).toMatchObject({
      ok: true,
      input: { baseUrl: 'https://a' },
      corrections: [{ kind: 'alias', from: 'url', to: 'baseUrl' }],
    });
    const decision = await repair(message(toolUse('f', 'fetch', { url: 'https://a' })), tools, deps);
    expect(decision).toMatchObject({ outcome: 'fixed', message: { content: [{ input: { baseUrl: 'https://a' } }] } });
  });

  it('an unknown tool name', async () => {
    const decision = await repair(message(toolUse('x', 'web_search', { query: 'q' })), tools, deps);
    expect(decision).toMatchObject({ outcome: 'refused', reason: 'unknown_tool' });
    expect(reshaper.reshape).not.toHaveBeenCalled();
  });
});
