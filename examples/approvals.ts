import { Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { z } from 'zod';
import { defineTool, withToolReceipts, type ToolJobData, type ToolJobResult } from 'bullmq-tool-receipts';
import { approveCall, denyCall, listPendingApprovals, type PendingApproval } from 'bullmq-tool-receipts/approvals';

const url = process.env.REDIS_URL;
if (!url) throw new Error('set REDIS_URL, e.g. REDIS_URL=redis://127.0.0.1:6379 (docker compose up -d starts one)');

// A refund above 100 waits for a person; the approver sees the amount and the card's last digits, never the card.
const refund = defineTool({
  name: 'refund',
  input: z.object({ orderId: z.string(), amount: z.number().positive(), card: z.string() }),
  effect: 'opaque',
  approval: (args) => (args.amount > 100 ? { reason: `refund of ${args.amount} is above 100` } : false),
  redact: (args) => ({ orderId: args.orderId, amount: args.amount, card: `****${args.card.slice(-4)}` }),
  approvalTimeoutMs: 60 * 60_000, // nobody decides within an hour: it counts as denied
  async execute(args) {
    console.log(`refunding ${args.amount} for ${args.orderId}`);
    return { refunded: args.amount };
  },
});

const receipts = new Redis(url, { commandTimeout: 5_000 });
const connection = new Redis(url, { maxRetriesPerRequest: null });
const processor = withToolReceipts({ redis: receipts, tools: [refund] });
const worker = new Worker<ToolJobData, ToolJobResult>('approval-calls', processor, { connection });
processor.attach(worker);
const queue = new Queue<ToolJobData, ToolJobResult>('approval-calls', { connection });
const listening = connection.duplicate();
const events = new QueueEvents('approval-calls', { connection: listening });
await events.waitUntilReady(); // listening before the first job is added, so its completion is not missed

/** Waits until the run's call is listed as awaiting approval: the job is parked meanwhile, the worker free. */
async function pendingIn(runId: string): Promise<PendingApproval> {
  for (;;) {
    const pending = (await listPendingApprovals({ redis: receipts, tenantId: 'acme' })).find((p) => p.runId === runId);
    if (pending) return pending;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

for (const decide of [approveCall, denyCall]) {
  const runId = `run-${Date.now()}-${decide.name}`;
  const job = await queue.add('turn', {
    tenantId: 'acme',
    runId,
    calls: [{ id: 'toolu_01', name: 'refund', input: { orderId: 'A-17', amount: 250, card: '4242424242424242' } }],
  });
  const pending = await pendingIn(runId);
  console.log('awaiting approval:', pending.reason, JSON.stringify(pending.shown));
  // The decision names the call's lifetime and arguments (from the listing), so it can release nothing else.
  const note = decide === approveCall ? 'checked with the customer' : 'refunds above 100 need a ticket';
  await decide({ redis: receipts, ...pending, actor: 'ana@example.com', note, queue });
  const { results } = await job.waitUntilFinished(events, 30_000); // promoted: it runs a quarter second later
  console.log(decide.name, results[0]?.outcome, results[0]?.content);
}

await worker.close();
await Promise.all([queue.close(), events.close()]);
await Promise.all([receipts.quit(), connection.quit(), listening.quit()]);
