import { Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { z } from 'zod';
import { generateText, stepCountIs, type ModelMessage } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { defineTool, withToolReceipts } from 'bullmq-tool-receipts';
import { createToolCallClient } from 'bullmq-tool-receipts/client';
import { aiSdkReceiptTools } from 'bullmq-tool-receipts/ai-sdk';

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

// The worker (usually its own process; it never imports the AI SDK).
const receipts = new Redis(url);
const connection = new Redis(url, { maxRetriesPerRequest: null });
const processor = withToolReceipts({ redis: receipts, tools: [refund] });
const worker = new Worker('ai-sdk-calls', processor, { connection });
processor.attach(worker);

// The agent's side: the SDK's own tools, whose calls run on the worker.
const queue = new Queue('ai-sdk-calls', { connection });
const listening = connection.duplicate();
const queueEvents = new QueueEvents('ai-sdk-calls', { connection: listening });
const client = createToolCallClient({ queue, queueEvents });
const tools = aiSdkReceiptTools([refund], {
  client,
  tenantId: 'acme',
  runId: `conversation-${Date.now()}`, // the conversation's id: a retried step is the same run
  approvals: { redis: receipts, queue, actor: 'ana@example.com' },
});

// The SDK's test model stands in for a real one: it asks for the refund, then says what the tool answered.
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

const messages: ModelMessage[] = [{ role: 'user', content: 'Please refund order A-17: 250.' }];
const asked = await generateText({ model, tools, messages, stopWhen: stepCountIs(5) });
messages.push(...asked.response.messages);
for (const part of asked.content) {
  if (part.type !== 'tool-approval-request') continue;
  console.log(`approval asked: ${part.toolCall.toolName}`);
  // A person approves in your UI; the response goes back in the messages, and becomes the receipt's decision.
  messages.push({ role: 'tool', content: [{ type: 'tool-approval-response', approvalId: part.approvalId, approved: true }] });
}
const answered = await generateText({ model, tools, messages, stopWhen: stepCountIs(5) });
console.log(`model: ${answered.text}`);
// The same step again (a retry after a crash): the recorded result comes back, nothing is refunded twice.
const retried = await generateText({ model, tools, messages, stopWhen: stepCountIs(5) });
console.log(`retried: ${retried.text}`);

await worker.close();
await Promise.all([queue.close(), queueEvents.close()]);
await Promise.all([receipts.quit(), connection.quit(), listening.quit()]);
