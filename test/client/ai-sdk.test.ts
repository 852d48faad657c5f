/**
 * The AI SDK tools on an in-process worker: what the model is shown, input
 * the SDK would refuse reaching the worker's repair, and error results
 * reaching the model as tool errors.
 */
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { aiSdkTools, ToolErrorResult } from '../../src/client/index.js';
import { defineTool, toolJsonSchema } from '../../src/bullmq/index.js';
import { useLanes } from '../bullmq/fixture.js';
import { clientOn } from './support.js';

const lane = useLanes();

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

/** A model that calls `toolName` with `input` once, then answers with what the tool message said. */
function scriptedModel(toolName: string, input: string) {
  const prompts: Array<Array<{ role: string; content: unknown }>> = [];
  const model = new MockLanguageModelV3({
    doGenerate: async ({ prompt, tools }) => {
      prompts.push(prompt as never);
      const toolMessage = prompt.find((m) => m.role === 'tool');
      if (!toolMessage) {
        return {
          content: [{ type: 'tool-call', toolCallId: 'call_1', toolName, input }],
          finishReason: { unified: 'tool-calls', raw: undefined },
          usage,
          warnings: [],
          request: { body: tools },
        };
      }
      const output = (toolMessage.content[0] as { output: { type: string; value: unknown } }).output;
      return { content: [{ type: 'text', text: `${output.type}: ${String(output.value)}` }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] };
    },
  });
  return { model, prompts };
}

describe('aiSdkTools', () => {
  const received: unknown[] = [];
  const createTicket = defineTool({
    name: 'create_ticket',
    description: 'Open a ticket.',
    input: z.object({ title: z.string().min(1), assignee: z.string().optional() }),
    effect: 'opaque',
    destructive: false,
    execute: (args) => {
      received.push(args);
      if (args.title === 'explode') throw new Error('the ticket service is down');
      return { ticket: 'T-1', ...args };
    },
  });

  it('shows the model the tool JSON Schema and lets the worker repair what the SDK would refuse', async () => {
    const l = await lane();
    l.worker({ tools: [createTicket] });
    const tools = aiSdkTools([createTicket], { client: clientOn(l), tenantId: 'acme', runId: 'run-1' });
    // A model sends null for an optional field: zod in the SDK would refuse it; the worker drops it.
    const { model } = scriptedModel('create_ticket', '{"title":"Printer","assignee":null}');
    const result = await generateText({ model, tools, prompt: 'open one', stopWhen: stepCountIs(3) });

    const sentTools = result.steps[0]!.request.body as Array<{ name: string; description: string; inputSchema: unknown }>;
    expect(sentTools).toEqual([
      expect.objectContaining({ name: 'create_ticket', description: 'Open a ticket.', inputSchema: expect.objectContaining({ properties: toolJsonSchema(createTicket).properties }) }),
    ]);
    expect(received.at(-1)).toEqual({ title: 'Printer' });
    expect(result.text).toBe('text: {"ticket":"T-1","title":"Printer"}');
    expect(await l.queue.getJobs(['completed'])).toEqual([expect.objectContaining({ id: 'turn|acme|run-1|ai-sdk%3Acall_1' })]);
  });

  it('an error result reaches the model as a tool error with the worker\'s text', async () => {
    const l = await lane();
    l.worker({ tools: [createTicket] });
    const tools = aiSdkTools([createTicket], { client: clientOn(l), tenantId: 'acme', runId: 'run-2' });
    const { model } = scriptedModel('create_ticket', '{"title":"explode"}');
    const result = await generateText({ model, tools, prompt: 'open one', stopWhen: stepCountIs(3) });

    const toolError = result.steps[0]!.content.find((part) => part.type === 'tool-error');
    expect(toolError).toMatchObject({ toolCallId: 'call_1', error: expect.any(ToolErrorResult) });
    expect((toolError as { error: ToolErrorResult }).error.result).toMatchObject({ is_error: true, outcome: 'failed' });
    expect(result.text).toMatch(/^error-text: .*the ticket service is down/);
  });
});
