import { Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { z } from 'zod';
import { AIMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { Command, END, MemorySaver, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { defineTool, withToolReceipts } from 'bullmq-tool-receipts';
import { createToolCallClient } from 'bullmq-tool-receipts/client';
import { langGraphDecision, langGraphReceiptTools, type LangGraphApprovalRequest } from 'bullmq-tool-receipts/langgraph';

const url = process.env.REDIS_URL;
if (!url) throw new Error('set REDIS_URL, e.g. REDIS_URL=redis://127.0.0.1:6379 (docker compose up -d starts one)');

// One definition for both sides: the worker runs it; the agent's tool takes its name, description, schema and approval rule.
const refund = defineTool({
  name: 'refund',
  description: 'Refund an order.',
  input: z.object({ orderId: z.string(), amount: z.number().positive() }),
  effect: 'opaque',
  approval: (args) => args.amount > 100,
  async execute(args) {
    console.log(`refunding ${args.amount} for ${args.orderId}`);
    return { refunded: args.amount };
  },
});

// The worker (usually its own process; it never imports LangChain).
const receipts = new Redis(url);
const connection = new Redis(url, { maxRetriesPerRequest: null });
const processor = withToolReceipts({ redis: receipts, tools: [refund] });
const worker = new Worker('langgraph-calls', processor, { connection });
processor.attach(worker);

// The agent's side: LangChain tools for ToolNode, whose calls run on the worker (the run is the graph's thread_id).
const queue = new Queue('langgraph-calls', { connection });
const listening = connection.duplicate();
const queueEvents = new QueueEvents('langgraph-calls', { connection: listening });
const client = createToolCallClient({ queue, queueEvents });
const tools = langGraphReceiptTools([refund], { client, tenantId: 'acme', approvals: { redis: receipts, queue } });

// LangChain's fake model stands in for a real one: it asks for the refund, then says what the tool answered.
const respond = (messages: BaseMessage[]) => {
  const last = messages.at(-1);
  if (last instanceof ToolMessage) return new AIMessage(`The tool said: ${String(last.content)}`);
  return new AIMessage({
    content: '',
    tool_calls: [{ name: 'refund', args: { orderId: 'A-17', amount: 250 }, id: 'call_1', type: 'tool_call' }],
  });
};
const model = fakeModel();
for (let i = 0; i < 4; i++) model.respond(respond);
const bound = model.bindTools(tools);
const graph = new StateGraph(MessagesAnnotation)
  .addNode('agent', async (state) => ({ messages: [await bound.invoke(state.messages)] }))
  .addNode('tools', new ToolNode(tools))
  .addEdge(START, 'agent')
  .addConditionalEdges('agent', toolsCondition, ['tools', END])
  .addEdge('tools', 'agent')
  .compile({ checkpointer: new MemorySaver() });

const thread = { configurable: { thread_id: `thread-${Date.now()}` } };
const asked = await graph.invoke({ messages: [{ role: 'user', content: 'Please refund order A-17: 250.' }] }, thread);
const [interrupted] = (asked as { __interrupt__?: { value: LangGraphApprovalRequest }[] }).__interrupt__ ?? [];
if (interrupted) {
  console.log(`approval asked: ${interrupted.value.toolName}`);
  // A person approves; the resume names the call, its lifetime and arguments, and becomes the receipt's decision.
  const decision = langGraphDecision(interrupted.value, { approved: true, actor: 'ana@example.com' });
  const atInterrupt = (await graph.getState(thread)).config;
  const answered = await graph.invoke(new Command({ resume: decision }), thread);
  console.log(`model: ${String(answered.messages.at(-1)?.content)}`);
  // The same resume from the same checkpoint (a retry after a crash): the recorded result, nothing refunded twice.
  const retried = await graph.invoke(new Command({ resume: decision }), atInterrupt);
  console.log(`retried: ${String(retried.messages.at(-1)?.content)}`);
}

await worker.close();
await Promise.all([queue.close(), queueEvents.close()]);
await Promise.all([receipts.quit(), connection.quit(), listening.quit()]);
