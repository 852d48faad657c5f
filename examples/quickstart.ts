import { Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { z } from 'zod';
import { defineTool, withToolReceipts, type ToolJobData, type ToolJobResult } from 'bullmq-tool-receipts';

const url = process.env.REDIS_URL;
if (!url) throw new Error('set REDIS_URL, e.g. REDIS_URL=redis://127.0.0.1:6379 (docker compose up -d starts one)');

// Your tool. Here it only prints; yours would call the mail provider.
const sendEmail = defineTool({
  name: 'send_email',
  input: z.object({ to: z.email(), subject: z.string() }),
  effect: 'opaque', // one indivisible effect: after a crash it is never repeated blindly
  destructive: false,
  async execute(args, ctx) {
    console.log(`sending "${args.subject}" to ${args.to} (idempotency key ${ctx.idempotencyKey})`);
    return { sent: true };
  },
});

// The worker: receipts get their own connection, BullMQ its own.
const receipts = new Redis(url, { commandTimeout: 5_000 });
const connection = new Redis(url, { maxRetriesPerRequest: null });
const processor = withToolReceipts({ redis: receipts, tools: [sendEmail] });
await processor.ready(); // a wrong or stopped Redis fails here, naming its URL
const worker = new Worker<ToolJobData, ToolJobResult>('tool-calls', processor, { connection });
processor.attach(worker);

// The producer: one job per model turn, holding that turn's tool calls.
const queue = new Queue<ToolJobData, ToolJobResult>('tool-calls', { connection });
const listening = connection.duplicate(); // QueueEvents blocks its connection, so it gets its own
const events = new QueueEvents('tool-calls', { connection: listening });
await events.waitUntilReady(); // listening before the first job is added, so its completion is not missed
const turn: ToolJobData = {
  tenantId: 'acme',
  runId: `run-${Date.now()}`, // one agent run (a conversation); receipts are scoped to it
  calls: [{ id: 'toolu_01', name: 'send_email', input: { to: 'ada@example.com', subject: 'Your invoice' } }],
};
for (const attempt of ['first', 'redelivered']) {
  const job = await queue.add('turn', turn); // the same turn twice, as a redelivery would
  const { results } = await job.waitUntilFinished(events, 30_000);
  console.log(attempt, results[0]?.outcome, results[0]?.content); // executed, then replayed
}

await worker.close();
await Promise.all([queue.close(), events.close()]);
await Promise.all([receipts.quit(), connection.quit(), listening.quit()]);
