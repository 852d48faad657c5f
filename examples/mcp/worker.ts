/**
 * A worker that exposes the fake mail server's tools (mail-server.ts) to a
 * model through the queue, each call at most once. It connects over stdio
 * (spawning the server) or, with MCP_URL set, over Streamable HTTP; then it
 * plays one agent turn twice, as a retried agent step would, and shows the
 * mail went out once.
 *
 *   npx tsx examples/mcp/worker.ts
 *   npx tsx examples/mcp/mail-server.ts http 3333 &  MCP_URL=http://127.0.0.1:3333/mcp npx tsx examples/mcp/worker.ts
 *
 * Redis: REDIS_URL if set, else a throwaway redis-server, else it asks you
 * to run `docker compose up -d`.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { toolListForModel, withToolReceipts } from '../../src/index.js';
import { createToolCallClient } from '../../src/client/index.js';
import { McpConnection, mcpTools } from '../../src/mcp/index.js';
import { redisForScript } from '../../scripts/demo-redis.js';

const serverScript = fileURLToPath(new URL('./mail-server.ts', import.meta.url));

// One client per server per worker process, reconnecting when the server goes away.
const mail = new McpConnection(async () => {
  const client = new Client({ name: 'mail-worker', version: '1.0.0' });
  const url = process.env.MCP_URL;
  await client.connect(
    url
      ? new StreamableHTTPClientTransport(new URL(url))
      : new StdioClientTransport({ command: process.execPath, args: ['--import', 'tsx', serverScript] }),
  );
  return client;
});

const tools = await mcpTools(mail, {
  namePrefix: 'mail_',
  tools: {
    // The team knows more than the annotations: ask the server whether a lost send landed.
    send_mail: {
      async reconcile(_args, ctx) {
        const found = await ctx.client.callTool({ name: 'find_mail', arguments: { key: ctx.idempotencyKey } });
        const text = (found.content as Array<{ type: string; text?: string }>)[0]?.text ?? 'none';
        return text === 'none' ? { status: 'not_started' } : { status: 'completed', result: `sent ${text}` };
      },
    },
  },
});
console.log('tools the model sees:', JSON.stringify(toolListForModel(tools).map((t) => t.name)));

const redisServer = await redisForScript('mcp-worker');
const prefix = `mcp${randomBytes(3).toString('hex')}`;
const connection = () => new Redis(redisServer.url, { maxRetriesPerRequest: null });
const processor = withToolReceipts({ redis: connection(), tools, prefix, logger: pino({ level: 'warn' }) });
const worker = new Worker('mail-tools', processor, { connection: connection(), prefix });
processor.attach(worker);

const queue = new Queue('mail-tools', { connection: connection(), prefix });
const queueEvents = new QueueEvents('mail-tools', { connection: connection(), prefix });
await queueEvents.waitUntilReady();
const client = createToolCallClient({ queue, queueEvents, timeoutMs: 30_000 });

// What a model would send: one tool_use block. Submitted twice, as a retried agent step would.
const turn = {
  tenantId: 'acme',
  runId: `run-${randomBytes(3).toString('hex')}`,
  turnId: 'turn-1',
  calls: [{ id: 'toolu_1', name: 'mail_send_mail', input: { to: 'ops@example.com', subject: 'Deploy done', body: 'All green.' } }],
};
console.log('first submit: ', (await client.submit(turn))[0]);
console.log('second submit:', (await client.submit({ ...turn, turnId: 'turn-1-retried' }))[0]);

const count = await (await mail.client()).callTool({ name: 'mail_count', arguments: {} });
console.log('mails the server really sent:', (count.content as Array<{ text: string }>)[0]?.text);

await worker.close();
await Promise.all([queue.close(), queueEvents.close(), mail.close()]);
await redisServer.stop();
process.exit(0);
