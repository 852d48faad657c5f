// The worker of an app that runs BullMQ 6 on node-redis and has no ioredis
// installed: receipts and queue both go through node-redis clients (BullMQ
// wraps a raw node-redis client itself). Compiled strict, NodeNext, against the
// packed package, then run on a real Redis: executed, then replayed.
import { Queue, QueueEvents, Worker } from 'bullmq';
import { createClient } from 'redis';
import { z } from 'zod';
import { defineTool, withToolReceipts, type RedisConnection, type ToolJobData, type ToolJobResult } from 'bullmq-tool-receipts';
import { ReceiptStore } from 'bullmq-tool-receipts/redis';

const url = process.env.REDIS_URL!;
const prefix = process.env.RECEIPTS_PREFIX!;
const sent: string[] = [];

const sendEmail = defineTool({
  name: 'send_email',
  input: z.object({ to: z.email(), subject: z.string(), body: z.string() }),
  effect: 'opaque',
  destructive: false,
  async execute(args, ctx) {
    sent.push(args.to);
    return { messageId: `m-${sent.length}`, idempotencyKey: ctx.idempotencyKey };
  },
});

// A connected node-redis client is a connection the stores accept.
const receipts = await createClient({ url }).connect();
const redis: RedisConnection = receipts;
const processor = withToolReceipts({ redis, prefix, tools: [sendEmail] });

const bull = await createClient({ url }).connect();
const bullEvents = await createClient({ url }).connect();
const queueName = `${prefix}-calls`;
const worker = new Worker(queueName, processor, { connection: bull, prefix: `${prefix}-bull` });
processor.attach(worker);
const queue = new Queue<ToolJobData>(queueName, { connection: bull, prefix: `${prefix}-bull` });
const events = new QueueEvents(queueName, { connection: bullEvents, prefix: `${prefix}-bull` });
await events.waitUntilReady();

const data: ToolJobData = {
  tenantId: 'acme',
  runId: 'run-1',
  calls: [{ id: 'toolu_1', name: 'send_email', input: { to: 'ada@example.com', subject: 'hi', body: 'hello' } }],
};
const outcomes: string[] = [];
for (const jobId of ['first', 'second']) {
  const job = await queue.add('turn', data, { jobId });
  const result = (await job.waitUntilFinished(events, 30_000)) as ToolJobResult;
  outcomes.push(...result.results.map((block) => block.outcome));
}
const listed = await new ReceiptStore({ redis, prefix }).listRun('acme', 'run-1');
console.log(`RESULT ${JSON.stringify({ outcomes, sent, receipts: listed.map((r) => r.status) })}`);

await worker.close();
await Promise.all([queue.close(), events.close()]);
await Promise.all([receipts.close(), bull.close(), bullEvents.close()]);
