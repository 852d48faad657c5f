/**
 * The format adapters alone (pure, no Redis): order, refused calls, error
 * results, and what each one ignores or refuses.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  aiSdkToolCalls,
  aiSdkToolMessage,
  anthropicToolCalls,
  anthropicToolResultMessage,
  callsToSubmit,
  InvalidAssistantMessageError,
  openAIChatToolCalls,
  openAIChatToolMessages,
  openAIResponsesToolCalls,
  openAIResponsesToolOutputs,
  ResultCountMismatchError,
  resultsInOrder,
  type TurnCallEntry,
} from '../../src/client/index.js';
import type { ToolResultBlock } from '../../src/bullmq/index.js';

const ok = (id: string, content: string): ToolResultBlock => ({ type: 'tool_result', tool_use_id: id, content, outcome: 'executed' });
const failed = (id: string, content: string): ToolResultBlock => ({
  type: 'tool_result',
  tool_use_id: id,
  content,
  is_error: true,
  outcome: 'failed',
});

describe('OpenAI arguments', () => {
  it('arguments that are not JSON become a refused call with a message, between the others in order', () => {
    const turn = openAIChatToolCalls({
      tool_calls: [
        { id: 'a', type: 'function', function: { name: 'f', arguments: '{"x":1}' } },
        { id: 'b', type: 'function', function: { name: 'f', arguments: '{"x":' } },
        { id: 'c', type: 'function', function: { name: 'f', arguments: '' } },
      ],
    });
    expect(callsToSubmit(turn)).toEqual([
      { id: 'a', name: 'f', input: { x: 1 } },
      { id: 'c', name: 'f', input: {} },
    ]);
    const results = resultsInOrder(turn, [ok('a', 'A'), ok('c', 'C')]);
    expect(results.map((r) => [r.tool_use_id, r.outcome])).toEqual([
      ['a', 'executed'],
      ['b', 'rejected'],
      ['c', 'executed'],
    ]);
    expect(results[1]!.content).toMatch(
      /^the arguments of tool call b \(f\) are not valid JSON.*Received: \{"x":\. Send the arguments again/,
    );
    expect(openAIChatToolMessages(turn, results).map((m) => m.tool_call_id)).toEqual(['a', 'b', 'c']);
  });

  it('never throws on any arguments text: each call is submitted or refused', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string(), fc.json()), { maxLength: 5 }), (texts) => {
        const turn = openAIResponsesToolCalls(
          texts.map((text, i) => ({ type: 'function_call', call_id: `c${i}`, name: 'f', arguments: text })),
        );
        expect(turn.entries).toHaveLength(texts.length);
        turn.entries.forEach((entry, i) => {
          const parsed = (() => {
            try {
              return { ok: true, value: texts[i]!.trim() === '' ? {} : (JSON.parse(texts[i]!) as unknown) };
            } catch {
              return { ok: false };
            }
          })();
          expect(entry.kind).toBe(parsed.ok ? 'call' : 'rejected');
          if (entry.kind === 'call') expect(entry.call.input).toEqual(parsed.value);
        });
      }),
    );
  });

  it('custom (free-form) tool calls and nameless calls are refused, a call without an id is a typed error', () => {
    const turn = openAIChatToolCalls({
      tool_calls: [
        { id: 'x', type: 'custom' },
        { id: 'y', type: 'function', function: { name: '', arguments: '{}' } },
      ],
    });
    expect(turn.entries.map((e) => e.kind)).toEqual(['rejected', 'rejected']);
    expect(() => openAIChatToolCalls({ tool_calls: [{ id: '', type: 'function', function: { name: 'f', arguments: '{}' } }] })).toThrow(
      InvalidAssistantMessageError,
    );
    expect(openAIChatToolCalls({ tool_calls: null }).entries).toEqual([]);
  });
});

describe('error results per API', () => {
  const turn = anthropicToolCalls({
    content: [
      { type: 'text' },
      { type: 'tool_use', id: 't1', name: 'a', input: {} } as never,
      { type: 'server_tool_use', id: 's1', name: 'web_search', input: {} } as never,
      { type: 'tool_use', id: 't2', name: 'b', input: { q: 1 } } as never,
    ],
  });
  const results = [ok('t1', 'fine'), failed('t2', 'it broke')];

  it('Anthropic: tool_use blocks only (not server tools), is_error only on errors', () => {
    expect(callsToSubmit(turn).map((c) => c.id)).toEqual(['t1', 't2']);
    expect(anthropicToolResultMessage(turn, results)).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 't1', content: 'fine' },
        { type: 'tool_result', tool_use_id: 't2', content: 'it broke', is_error: true },
      ],
    });
  });

  it('AI SDK: error-text for errors; provider-executed calls are not ours to run', () => {
    const aiTurn = aiSdkToolCalls([
      { type: 'tool-call', toolCallId: 't1', toolName: 'a', input: {} } as never,
      { type: 'tool-call', toolCallId: 'p1', toolName: 'web_search', input: {}, providerExecuted: true } as never,
      { type: 'tool-call', toolCallId: 't2', toolName: 'b', input: {} } as never,
    ]);
    expect(aiSdkToolMessage(aiTurn, results).content.map((p) => [p.toolCallId, p.toolName, p.output.type])).toEqual([
      ['t1', 'a', 'text'],
      ['t2', 'b', 'error-text'],
    ]);
  });

  it('OpenAI: the error text is the content (the APIs have no error flag)', () => {
    const oaTurn = openAIResponsesToolCalls({ output: [{ type: 'function_call', call_id: 't1', name: 'a', arguments: '{}' } as never] });
    expect(openAIResponsesToolOutputs(oaTurn, [failed('t1', 'it broke')])).toEqual([
      { type: 'function_call_output', call_id: 't1', output: 'it broke' },
    ]);
  });

  it('results that do not pair one to one with the calls are a typed error', () => {
    expect(() => anthropicToolResultMessage(turn, [results[0]!])).toThrow(ResultCountMismatchError);
    expect(() => resultsInOrder(turn, [])).toThrow(ResultCountMismatchError);
  });
});

describe('resultsInOrder', () => {
  it('puts every refused result in its place and the submitted ones in order around them', () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { maxLength: 8 }), (refusedAt) => {
        const entries: TurnCallEntry[] = refusedAt.map((refused, i) =>
          refused
            ? { kind: 'rejected', id: `c${i}`, name: 'f', result: { ...ok(`c${i}`, 'no'), outcome: 'rejected' } }
            : { kind: 'call', call: { id: `c${i}`, name: 'f', input: {} } },
        );
        const turn = { entries };
        const submitted = callsToSubmit(turn).map((c) => ok(c.id, 'yes'));
        const merged = resultsInOrder(turn, submitted);
        expect(merged.map((r) => r.tool_use_id)).toEqual(refusedAt.map((_, i) => `c${i}`));
        expect(merged.map((r) => r.content)).toEqual(refusedAt.map((refused) => (refused ? 'no' : 'yes')));
      }),
    );
  });
});
