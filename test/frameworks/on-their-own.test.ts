/**
 * What each framework does on its own, with a plain tool of its own that
 * counts its runs (no receipts, no queue): the behaviour docs/frameworks.md's
 * table states and the receipt tools are built for. If a framework release
 * changes one of these, this file says so before the docs go stale.
 */
import { AIMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { tool as langChainTool } from '@langchain/core/tools';
import { Command, END, interrupt, MemorySaver, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { Mastra } from '@mastra/core';
import { Agent as MastraAgent } from '@mastra/core/agent';
import { InMemoryStore } from '@mastra/core/storage';
import { createTool } from '@mastra/core/tools';
import { Agent, run, RunState, setTracingDisabled, tool as openAITool, type AgentInputItem } from '@openai/agents';
import { assistantMessage, functionCall, modelResponder, ScriptedModel, type RecordedModelCall } from '@openai/agents/testing';
import { generateText, jsonSchema, stepCountIs, tool as aiTool, type ModelMessage } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

setTracingDisabled(true);
const EMAIL = { to: 'ops@example.com' };
const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

/** An AI SDK test model: calls send_email as call_1 until it is shown a tool result, then says what it read. */
const aiModel = () =>
  new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      const answer = prompt.flatMap((m) => (m.role === 'tool' ? m.content : [])).find((p) => p.type === 'tool-result');
      const content = answer
        ? [{ type: 'text' as const, text: `read: ${JSON.stringify(answer.output)}` }]
        : [{ type: 'tool-call' as const, toolCallId: 'call_1', toolName: 'send_email', input: JSON.stringify(EMAIL) }];
      return { content, finishReason: { unified: answer ? 'stop' : 'tool-calls', raw: undefined }, usage, warnings: [] };
    },
  });

describe('the AI SDK on its own', () => {
  it('runs the tool again when generateText runs again on the same messages, runs an approved call with arguments edited in the history, and never runs a denied one', async () => {
    const ran: unknown[] = [];
    const send = aiTool({
      inputSchema: jsonSchema<{ to: string }>({ type: 'object', properties: { to: { type: 'string' } } }),
      needsApproval: true,
      execute: async (input) => (ran.push(input), 'sent'),
    });
    const messages: ModelMessage[] = [{ role: 'user', content: 'Tell ops.' }];
    const asked = await generateText({ model: aiModel(), tools: { send_email: send }, messages, stopWhen: stepCountIs(3) });
    const request = asked.content.find((p) => p.type === 'tool-approval-request')!;
    const approved: ModelMessage[] = [
      ...messages,
      ...asked.response.messages,
      { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: request.approvalId, approved: true }] },
    ];
    await generateText({ model: aiModel(), tools: { send_email: send }, messages: approved, stopWhen: stepCountIs(3) });
    await generateText({ model: aiModel(), tools: { send_email: send }, messages: approved, stopWhen: stepCountIs(3) });
    expect(ran).toEqual([EMAIL, EMAIL]);
    const edited = JSON.parse(JSON.stringify(approved).replaceAll(EMAIL.to, 'all@example.com')) as ModelMessage[];
    await generateText({ model: aiModel(), tools: { send_email: send }, messages: edited, stopWhen: stepCountIs(3) });
    expect(ran.at(-1)).toEqual({ to: 'all@example.com' });

    // A denial never reaches the tool.
    const denied = JSON.parse(JSON.stringify(approved).replace('"approved":true', '"approved":false')) as ModelMessage[];
    await generateText({ model: aiModel(), tools: { send_email: send }, messages: denied, stopWhen: stepCountIs(3) });
    expect(ran).toHaveLength(3);
  });
});

describe('OpenAI Agents on its own', () => {
  const respond = (call: RecordedModelCall) => {
    const items = typeof call.request.input === 'string' ? [] : (call.request.input as AgentInputItem[]);
    const answer = items.find((item) => item.type === 'function_call_result');
    if (answer?.type !== 'function_call_result') return [functionCall('send_email', EMAIL, { callId: 'call_1' })];
    return [assistantMessage(`read: ${JSON.stringify(answer.output)}`)];
  };
  const agentWith = (execute: () => string) =>
    new Agent({
      name: 'ops',
      instructions: 'Help ops.',
      model: new ScriptedModel(Array.from({ length: 4 }, () => modelResponder(respond))),
      tools: [
        openAITool({ name: 'send_email', description: 'Send.', parameters: z.object({ to: z.string() }), needsApproval: true, execute }),
      ],
    });

  it('runs the tool again each time the same approved RunState is resumed', async () => {
    let runs = 0;
    const agent = agentWith(() => `sent ${++runs}`);
    const asked = await run(agent, 'Tell ops.');
    const state = await RunState.fromString(agent, asked.state.toString());
    state.approve(state.getInterruptions()[0]!);
    const saved = state.toString();
    await run(agent, await RunState.fromString(agent, saved));
    await run(agent, await RunState.fromString(agent, saved));
    expect(runs).toBe(2);
  });

  it('shows the model a generic sentence for an error the tool threw', async () => {
    const agent = agentWith(() => {
      throw new Error('the outcome is unknown: do not retry');
    });
    const asked = await run(agent, 'Tell ops.');
    asked.state.approve(asked.interruptions[0]!);
    const result = await run(agent, asked.state);
    expect(String(result.finalOutput)).toMatch(/An error occurred/);
    expect(String(result.finalOutput)).not.toMatch(/do not retry/);
  });
});

describe('Mastra on its own', () => {
  it('runs the tool again when a turn runs again, runs an approved call with the arguments its snapshot holds, edited ones included, and never runs a declined one', async () => {
    const ran: unknown[] = [];
    const send = createTool({
      id: 'send_email',
      description: 'Send.',
      inputSchema: z.object({ to: z.string() }),
      requireApproval: true,
      execute: async (input) => (ran.push(input), 'sent'),
    });
    const store = new InMemoryStore();
    const ops = new MastraAgent({ id: 'ops', name: 'ops', instructions: 'Help ops.', model: aiModel(), tools: { send_email: send } });
    const agent = new Mastra({ agents: { ops }, storage: store, logger: false }).getAgent('ops');
    for (let turn = 0; turn < 2; turn++) {
      const asked = await agent.generate('Tell ops.');
      await agent.approveToolCallGenerate({ runId: asked.runId!, toolCallId: 'call_1' });
    }
    expect(ran).toEqual([EMAIL, EMAIL]);

    const asked = await agent.generate('Tell ops.');
    const workflows = (await store.getStore('workflows'))!;
    const where = { workflowName: 'executionWorkflow', runId: asked.runId! };
    const snapshot = JSON.parse(JSON.stringify(await workflows.loadWorkflowSnapshot(where)).replaceAll(EMAIL.to, 'all@example.com'));
    await workflows.persistWorkflowSnapshot({ ...where, snapshot });
    await agent.approveToolCallGenerate({ runId: asked.runId!, toolCallId: 'call_1' });
    expect(ran.at(-1)).toEqual({ to: 'all@example.com' });

    // A decline never reaches the tool.
    const declined = await agent.generate('Tell ops.');
    await agent.declineToolCallGenerate({ runId: declined.runId!, toolCallId: 'call_1' });
    expect(ran).toHaveLength(3);
  });
});

describe('LangGraph.js on its own', () => {
  it('runs the code before interrupt() again on resume, and the whole tool again when a checkpoint before it is replayed', async () => {
    let before = 0;
    let after = 0;
    const send = langChainTool(
      async () => {
        before++;
        interrupt({ ask: 'approve?' });
        after++;
        return 'sent';
      },
      { name: 'send_email', description: 'Send.', schema: z.object({ to: z.string() }) },
    );
    const model = fakeModel();
    const respond = (messages: BaseMessage[]) =>
      messages.at(-1) instanceof ToolMessage
        ? new AIMessage('read')
        : new AIMessage({ content: '', tool_calls: [{ name: 'send_email', args: EMAIL, id: 'call_1', type: 'tool_call' }] });
    for (let i = 0; i < 4; i++) model.respond(respond);
    const bound = model.bindTools([send]);
    const graph = new StateGraph(MessagesAnnotation)
      .addNode('agent', async (state) => ({ messages: [await bound.invoke(state.messages)] }))
      .addNode('tools', new ToolNode([send]))
      .addEdge(START, 'agent')
      .addConditionalEdges('agent', toolsCondition, ['tools', END])
      .addEdge('tools', 'agent')
      .compile({ checkpointer: new MemorySaver() });
    const thread = { configurable: { thread_id: 't' } };
    await graph.invoke({ messages: [{ role: 'user', content: 'Tell ops.' }] }, thread);
    const atInterrupt = (await graph.getState(thread)).config;
    await graph.invoke(new Command({ resume: true }), thread);
    expect([before, after]).toEqual([2, 1]);
    await graph.invoke(new Command({ resume: true }), atInterrupt);
    expect([before, after]).toEqual([3, 2]);
  });
});
