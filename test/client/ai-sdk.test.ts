/**
 * The AI SDK tools on an in-process worker: what the model is shown, input
 * the SDK would refuse reaching the worker's repair, and error results
 * reaching the model as tool errors.
 */
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { aiSdkTools, ToolErrorResult, TurnConflictError } from '../../src/client/index.js';
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
      return {
        content: [{ type: 'text', text: `${output.type}: ${String(output.value)}` }],
        finishReason: { unified: 'stop', raw: undefined },
        usage,
        warnings: [],
      };
    },
  });
  return { model, prompts };
}

/**
 * A model that plays `steps` in order, one per request, picking the step by
 * the assistant messages already in the prompt (so the same prompt always
 * gets the same step); each step is the tool calls it makes (`[id, tool,
 * input]`), and after the last it answers with every tool output it was given.
 */
function stepsModel(steps: ReadonlyArray<ReadonlyArray<readonly [string, string, string]>>) {
  return new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      const step = prompt.filter((m) => m.role === 'assistant').length;
      const calls = steps[step];
      if (calls) {
        return {
          content: calls.map(([toolCallId, toolName, input]) => ({ type: 'tool-call' as const, toolCallId, toolName, input })),
          finishReason: { unified: 'tool-calls', raw: undefined },
          usage,
          warnings: [],
        };
      }
      const outputs = prompt.flatMap((m) => (m.role === 'tool' ? m.content : [])) as Array<{ output: { type: string; value: unknown } }>;
      const text = outputs.map(({ output }) => `${output.type}: ${String(output.value)}`).join('\n');
      return { content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] };
    },
  });
}

/** A provider that numbers its tool calls per response, so `call_0` comes back in every step. */
const reusedIds = [[['call_0', 'create_ticket', '{"title":"Printer"}']], [['call_0', 'create_ticket', '{"title":"Scanner"}']]] as const;

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
      expect.objectContaining({
        name: 'create_ticket',
        description: 'Open a ticket.',
        inputSchema: expect.objectContaining({ properties: toolJsonSchema(createTicket).properties }),
      }),
    ]);
    expect(received.at(-1)).toEqual({ title: 'Printer' });
    expect(result.text).toBe('text: {"ticket":"T-1","title":"Printer"}');
    expect(await l.queue.getJobs(['completed'])).toEqual([
      expect.objectContaining({ id: expect.stringMatching(/^turn\|acme\|run-1\|ai-sdk%3Acall_1%3A[0-9a-f]{32}$/) }),
    ]);
  });

  it("an error result reaches the model as a tool error with the worker's text", async () => {
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

  it("a tool-call id the provider reuses in a later step runs that step's call under a turn of its own", async () => {
    const l = await lane();
    l.worker({ tools: [createTicket] });
    const before = received.length;
    const tools = aiSdkTools([createTicket], { client: clientOn(l), tenantId: 'acme', runId: 'run-3' });
    const result = await generateText({ model: stepsModel(reusedIds), tools, prompt: 'open two', stopWhen: stepCountIs(5) });

    expect(result.text).toBe('text: {"ticket":"T-1","title":"Printer"}\ntext: {"ticket":"T-1","title":"Scanner"}');
    expect(received.slice(before)).toEqual([{ title: 'Printer' }, { title: 'Scanner' }]);
    const ids = (await l.queue.getJobs(['completed'])).map((j) => j.id);
    expect(new Set(ids).size).toBe(2);
    expect(ids.every((id) => id?.startsWith('turn|acme|run-3|ai-sdk%3Acall_0%3A'))).toBe(true);
  });

  it('a step run again from the same messages attaches to the jobs it made, running nothing', async () => {
    const l = await lane();
    l.worker({ tools: [createTicket] });
    const tools = aiSdkTools([createTicket], { client: clientOn(l), tenantId: 'acme', runId: 'run-4' });
    const first = await generateText({ model: stepsModel(reusedIds), tools, prompt: 'open two', stopWhen: stepCountIs(5) });
    const jobs = (await l.queue.getJobs(['completed'])).map((j) => j.id).sort();
    const ran = received.length;

    // The agent lost the run and plays it again: same prompt, same provider answers.
    const again = await generateText({ model: stepsModel(reusedIds), tools, prompt: 'open two', stopWhen: stepCountIs(5) });
    expect(again.text).toBe(first.text);
    expect((await l.queue.getJobs(['completed'])).map((j) => j.id).sort()).toEqual(jobs);
    expect(received.length).toBe(ran);
  });

  it('a conflict that reaches the model says the call was not run, not that a turn was retried', async () => {
    const l = await lane();
    l.worker({ tools: [createTicket] });
    const before = received.length;
    // A turn id of one's own that repeats for a different call: the second call is refused.
    const tools = aiSdkTools([createTicket], {
      client: clientOn(l),
      tenantId: 'acme',
      runId: 'run-5',
      turnIdOf: (toolCallId) => toolCallId,
    });
    const result = await generateText({ model: stepsModel(reusedIds), tools, prompt: 'open two', stopWhen: stepCountIs(5) });

    const toolError = result.steps[1]!.content.find((part) => part.type === 'tool-error') as { error: ToolErrorResult } | undefined;
    expect(toolError?.error).toBeInstanceOf(ToolErrorResult);
    expect(toolError!.error.cause).toBeInstanceOf(TurnConflictError);
    expect(toolError!.error.result).toMatchObject({ tool_use_id: 'call_0', is_error: true, outcome: 'rejected' });
    const told = result.text.split('\n')[1]!;
    expect(told).toMatch(/^error-text: The create_ticket call call_0 was not run: .*nothing was done/);
    expect(told).not.toMatch(/retried/);
    expect(received.slice(before)).toEqual([{ title: 'Printer' }]);
  });
});
