// A worker written the way docs/worker.md shows one, compiled in a scratch
// app (strict, NodeNext) against the packed package, then run on a real Redis:
// one call executed by a real Worker, then replayed from its receipt.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Queue, QueueEvents, Worker } from 'bullmq';
import { Cluster, Redis } from 'ioredis';
import { z } from 'zod';
import {
  defineTool,
  hmacSha256Digest,
  withToolReceipts,
  type RedisConnection,
  type ToolJobData,
  type ToolJobResult,
} from 'bullmq-tool-receipts';
import { buildResumeJournalNote, journalFromReceipts } from 'bullmq-tool-receipts/core';
import { ReceiptStore } from 'bullmq-tool-receipts/redis';
import { RedisToolResultStore } from 'bullmq-tool-receipts/offload';
import { prepareToolInput } from 'bullmq-tool-receipts/repair';
import { testJob, toolResultStoreContract } from 'bullmq-tool-receipts/testing';
import { createConsoleHandler } from 'bullmq-tool-receipts/console';
import { MCP_IDEMPOTENCY_KEY_META, McpConnection, mcpTools } from 'bullmq-tool-receipts/mcp';

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

// Either client of the app's own ioredis is a connection the stores accept.
const receipts: RedisConnection = new Redis(url, { commandTimeout: 5_000 });
const clusterShaped: RedisConnection = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true });

const processor = withToolReceipts({
  redis: receipts,
  prefix,
  tools: [sendEmail],
  digest: hmacSha256Digest('consumer-test-secret'),
});
const connection = new Redis(url, { maxRetriesPerRequest: null });
const queueName = `${prefix}-calls`;
const worker = new Worker(queueName, processor, { connection, prefix: `${prefix}-bull` });
processor.attach(worker);

const queue = new Queue<ToolJobData>(queueName, { connection, prefix: `${prefix}-bull` });
const eventsConnection = new Redis(url, { maxRetriesPerRequest: null });
const events = new QueueEvents(queueName, { connection: eventsConnection, prefix: `${prefix}-bull` });
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

const store = new ReceiptStore({ redis: receipts, prefix });
const journal = journalFromReceipts(await store.listRun('acme', 'run-1'));
// The console's handler on a plain http server: the run's page lists the call.
const consoleServer = createServer(createConsoleHandler({ redis: receipts, prefix }));
await new Promise<void>((resolve) => consoleServer.listen(0, '127.0.0.1', resolve));
const runPage = await fetch(`http://127.0.0.1:${(consoleServer.address() as AddressInfo).port}/run?tenant=acme&run=run-1`);
const consolePage = { status: runPage.status, listsTheCall: (await runPage.text()).includes('send_email') };
await new Promise((resolve) => consoleServer.close(resolve));
const entries = {
  offload: typeof RedisToolResultStore,
  repair: typeof prepareToolInput,
  testing: [typeof testJob, typeof toolResultStoreContract],
  mcp: [typeof mcpTools, typeof McpConnection, MCP_IDEMPOTENCY_KEY_META],
};
console.log(
  `RESULT ${JSON.stringify({ outcomes, sent, completed: journal.completed.length, note: typeof buildResumeJournalNote(journal), entries, consolePage, clusterShaped: (clusterShaped as Cluster).isCluster })}`,
);

await worker.close();
await Promise.all([queue.close(), events.close()]);
await Promise.all([(receipts as Redis).quit(), connection.quit(), eventsConnection.quit()]);
(clusterShaped as Cluster).disconnect();
