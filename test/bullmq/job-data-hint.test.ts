/**
 * Job data in another model API's shape is refused as `job.invalid_data`
 * with a hint naming the `/client` adapter that converts it. The shapes are
 * the recorded messages of each API (test/fixtures/formats), put where a
 * user would put them: their calls as `calls`, or the whole message as data.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { InvalidJobDataError, parseToolJobData } from '../../src/bullmq/index.js';
import * as client from '../../src/client/index.js';

const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`../fixtures/formats/${name}.assistant.json`, import.meta.url), 'utf8')) as any; // recorded JSON in each API's own shape
const ids = { tenantId: 'acme', runId: 'run-1' };

function refusal(data: unknown): InvalidJobDataError {
  try {
    parseToolJobData(data);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidJobDataError);
    return error as InvalidJobDataError;
  }
  throw new Error('the data was accepted');
}

const chat = fixture('openai-chat').choices[0].message;
const responses = fixture('openai-responses');
const aiSdk = fixture('ai-sdk');
const anthropic = fixture('anthropic');

describe('job data shaped like another API', () => {
  it.each([
    ['OpenAI Chat tool_calls as calls', { ...ids, calls: chat.tool_calls }, 'openAIChatToolCalls'],
    ['an OpenAI Chat message as data', { ...ids, ...chat }, 'openAIChatToolCalls'],
    [
      'OpenAI Responses function_call items as calls',
      { ...ids, calls: responses.output.filter((o: { type: string }) => o.type === 'function_call') },
      'openAIResponsesToolCalls',
    ],
    ['an OpenAI Responses response as data', { ...ids, output: responses.output }, 'openAIResponsesToolCalls'],
    [
      'AI SDK tool-call parts as calls',
      { ...ids, calls: aiSdk.content.filter((p: { type: string }) => p.type === 'tool-call') },
      'aiSdkToolCalls',
    ],
    ['an AI SDK message as data', { ...ids, ...aiSdk }, 'aiSdkToolCalls'],
    ['an Anthropic message as data', { ...ids, ...anthropic }, 'anthropicToolCalls'],
  ])('%s: refused, and the hint names %s from /client', (_what, data, adapter) => {
    const error = refusal(data);
    expect(error.code).toBe('job.invalid_data');
    expect(error.hint).toContain(`${adapter}(`);
    expect(error.hint).toContain("'bullmq-tool-receipts/client'");
    expect(error.message).toMatch(new RegExp(`Hint: .*${adapter}`));
    // The adapter it names exists and turns that message into calls a job takes.
    expect(typeof (client as Record<string, unknown>)[adapter]).toBe('function');
  });

  it('the adapters the hints name turn those messages into valid job data', () => {
    for (const calls of [
      client.openAIChatToolCalls(chat),
      client.openAIResponsesToolCalls(responses),
      client.aiSdkToolCalls(aiSdk),
      client.anthropicToolCalls(anthropic),
    ]) {
      const valid = calls.entries.flatMap((e) => (e.kind === 'call' ? [e.call] : []));
      expect(valid.length).toBeGreaterThan(0);
      expect(parseToolJobData({ ...ids, calls: valid }).calls).toHaveLength(valid.length);
    }
  });

  it('gives no hint for data that is merely wrong, and quotes nothing the model wrote', () => {
    expect(refusal({ ...ids, calls: [] }).hint).toBeUndefined();
    expect(refusal({ tenantId: 'acme', calls: [{ id: 'toolu_1', name: 'x', input: {} }] }).hint).toBeUndefined();
    expect(refusal({ ...ids, calls: [{ id: 'toolu_1' }] }).hint).toBeUndefined();
    const secret = 'SECRET-ARGUMENT-TEXT';
    const error = refusal({ ...ids, calls: [{ id: 'c', type: 'function', function: { name: 'n', arguments: secret } }] });
    expect(error.message).not.toContain(secret);
  });

  it('still takes Anthropic-shaped calls, with or without input', () => {
    expect(
      parseToolJobData({
        ...ids,
        calls: [
          { id: 'toolu_1', name: 'send_email', input: { to: 'a' } },
          { id: 'toolu_2', name: 'noop' },
        ],
      }).calls,
    ).toHaveLength(2);
  });
});
