import { Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { z } from 'zod';
import { Mastra } from '@mastra/core';
import { Agent } from '@mastra/core/agent';
import { InMemoryStore } from '@mastra/core/storage';
import { MockLanguageModelV3 } from 'ai/test';
import { defineTool, withToolReceipts } from 'bullmq-tool-receipts';
import { createToolCallClient } from 'bullmq-tool-receipts/client';
import { mastraReceiptTools } from 'bullmq-tool-receipts/mastra';

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

// The worker (usually its own process; it never imports Mastra).
const receipts = new Redis(url);
const connection = new Redis(url, { maxRetriesPerRequest: null });
const processor = withToolReceipts({ redis: receipts, tools: [refund] });
const worker = new Worker('mastra-calls', processor, { connection });
processor.attach(worker);

// The agent's side: Mastra's own tools, whose calls run on the worker.
const queue = new Queue('mastra-calls', { connection });
const listening = connection.duplicate();
const queueEvents = new QueueEvents('mastra-calls', { connection: listening });
const client = createToolCallClient({ queue, queueEvents });
const tools = mastraReceiptTools([refund], {
  client,
  tenantId: 'acme',
  runId: `thread-${Date.now()}`, // the memory thread's id: a resumed or retried turn is the same run
  approvals: { redis: receipts, queue, actor: 'ana@example.com' },
});

// The AI SDK's test model stands in for a real one: it asks for the refund, then says what the tool answered.
const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
const model = new MockLanguageModelV3({
  doGenerate: async ({ prompt }) => {
    const answer = prompt.flatMap((m) => (m.role === 'tool' ? m.content : [])).find((p) => p.type === 'tool-result');
    const content = answer
      ? [{ type: 'text' as const, text: `The tool said: ${JSON.stringify(answer.output)}` }]
      : [{ type: 'tool-call' as const, toolCallId: 'call_1', toolName: 'refund', input: JSON.stringify({ orderId: 'A-17', amount: 250 }) }];
    return { content, finishReason: { unified: answer ? 'stop' : 'tool-calls', raw: undefined }, usage, warnings: [] };
  },
});
const support = new Agent({ id: 'support', name: 'support', instructions: 'Help with orders.', model, tools });
const agent = new Mastra({ agents: { support }, storage: new InMemoryStore(), logger: false }).getAgent('support');

const asked = await agent.generate('Please refund order A-17: 250.');
if (asked.finishReason === 'suspended' && asked.runId) {
  const { toolCallId, toolName } = asked.suspendPayload as { toolCallId: string; toolName: string };
  console.log(`approval asked: ${toolName}`);
  // A person approves; Mastra resumes the run, and the approval becomes the receipt's decision.
  const answered = await agent.approveToolCallGenerate({ runId: asked.runId, toolCallId });
  console.log(`model: ${answered.text}`);
}
// The turn retried: Mastra asks again, and the approval gives the recorded result; nothing is refunded twice.
const again = await agent.generate('Please refund order A-17: 250.');
if (again.finishReason === 'suspended' && again.runId) {
  const retried = await agent.approveToolCallGenerate({ runId: again.runId, toolCallId: 'call_1' });
  console.log(`retried: ${retried.text}`);
}

await worker.close();
await Promise.all([queue.close(), queueEvents.close()]);
await Promise.all([receipts.quit(), connection.quit(), listening.quit()]);
