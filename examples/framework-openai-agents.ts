import { Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { z } from 'zod';
import { Agent, run, RunState, setTracingDisabled, type AgentInputItem } from '@openai/agents';
import { assistantMessage, functionCall, modelResponder, ScriptedModel, type RecordedModelCall } from '@openai/agents/testing';
import { defineTool, withToolReceipts } from 'bullmq-tool-receipts';
import { createToolCallClient } from 'bullmq-tool-receipts/client';
import { openAIAgentsReceiptTools } from 'bullmq-tool-receipts/openai-agents';

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

// The worker (usually its own process; it never imports the Agents SDK).
const receipts = new Redis(url);
const connection = new Redis(url, { maxRetriesPerRequest: null });
const processor = withToolReceipts({ redis: receipts, tools: [refund] });
const worker = new Worker('openai-agents-calls', processor, { connection });
processor.attach(worker);

// The agent's side: the SDK's own function tools, whose calls run on the worker.
const queue = new Queue('openai-agents-calls', { connection });
const listening = connection.duplicate();
const queueEvents = new QueueEvents('openai-agents-calls', { connection: listening });
const client = createToolCallClient({ queue, queueEvents });
const tools = openAIAgentsReceiptTools([refund], {
  client,
  tenantId: 'acme',
  runId: `conversation-${Date.now()}`, // the conversation's id: a run resumed from a saved state is the same run
  approvals: { redis: receipts, queue, actor: 'ana@example.com' },
});

// The SDK's scripted model stands in for a real one: it asks for the refund, then says what the tool answered.
setTracingDisabled(true);
const respond = (call: RecordedModelCall) => {
  const items = typeof call.request.input === 'string' ? [] : (call.request.input as AgentInputItem[]);
  const answer = items.find((item) => item.type === 'function_call_result');
  if (answer?.type !== 'function_call_result') return [functionCall('refund', { orderId: 'A-17', amount: 250 }, { callId: 'call_1' })];
  return [assistantMessage(`The tool said: ${JSON.stringify(answer.output)}`)];
};
const model = new ScriptedModel(Array.from({ length: 6 }, () => modelResponder(respond)));
const agent = new Agent({ name: 'support', instructions: 'Help with orders.', model, tools });

const asked = await run(agent, 'Please refund order A-17: 250.');
const saved = asked.state.toString(); // an app keeps this while a person decides
const state = await RunState.fromString(agent, saved);
for (const interruption of state.getInterruptions()) {
  console.log(`approval asked: ${interruption.rawItem.type === 'function_call' ? interruption.rawItem.name : ''}`);
  state.approve(interruption); // becomes the receipt's decision when the run resumes
}
const approved = state.toString();
const answered = await run(agent, state);
console.log(`model: ${String(answered.finalOutput)}`);
// The approved state resumed again (the process died before it kept the answer): the recorded result, no second refund.
const retried = await run(agent, await RunState.fromString(agent, approved));
console.log(`retried: ${String(retried.finalOutput)}`);

await worker.close();
await Promise.all([queue.close(), queueEvents.close()]);
await Promise.all([receipts.quit(), connection.quit(), listening.quit()]);
