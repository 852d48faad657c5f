// A transactional tool: its INSERT commits in one transaction with the
// call's outcome row, so the ticket is created exactly once, whatever crashes.
import { Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { z } from 'zod';
import { defineTool, withToolReceipts, type ToolJobData, type ToolJobResult } from 'bullmq-tool-receipts';
import { applyOutcomeTable, pgDatabase } from 'bullmq-tool-receipts/transactional';

const url = process.env.REDIS_URL;
const databaseUrl = process.env.DATABASE_URL;
if (!url || !databaseUrl) throw new Error('set REDIS_URL and DATABASE_URL (a redis:// and a postgres:// URL)');

const pool = new pg.Pool({ connectionString: databaseUrl });
const database = pgDatabase(pool);
await pool.query('CREATE TABLE IF NOT EXISTS support_tickets (id serial PRIMARY KEY, title text NOT NULL)');
await applyOutcomeTable(database); // what `tool-receipts migrate --postgres <url>` does

const createTicket = defineTool({
  name: 'create_ticket',
  input: z.object({ title: z.string().min(1) }),
  effect: 'transactional',
  destructive: false,
  database,
  // Only this database, only through ctx.tx (the pg.PoolClient of the open transaction): nothing remote in here.
  async execute(args, ctx) {
    const { rows } = await ctx.tx.query('INSERT INTO support_tickets (title) VALUES ($1) RETURNING id', [args.title]);
    return { ticket: rows[0].id as number };
  },
});

const receipts = new Redis(url, { commandTimeout: 5_000 });
const connection = new Redis(url, { maxRetriesPerRequest: null });
const processor = withToolReceipts({ redis: receipts, tools: [createTicket] });
await processor.ready(); // a missing outcome table fails here, printing the migrate command
const worker = new Worker<ToolJobData, ToolJobResult>('ticket-calls', processor, { connection });
processor.attach(worker);

const queue = new Queue<ToolJobData, ToolJobResult>('ticket-calls', { connection });
const listening = connection.duplicate();
const events = new QueueEvents('ticket-calls', { connection: listening });
await events.waitUntilReady(); // listening before the first job is added, so its completion is not missed
const title = `Printer on fire ${Date.now()}`;
const turn: ToolJobData = {
  tenantId: 'acme',
  runId: `run-${Date.now()}`,
  calls: [{ id: 'toolu_01', name: 'create_ticket', input: { title } }],
};
for (const attempt of ['first', 'redelivered']) {
  const job = await queue.add('turn', turn); // the same turn twice, as a redelivery would
  const { results } = await job.waitUntilFinished(events, 30_000);
  console.log(attempt, results[0]?.outcome, results[0]?.content); // executed, then replayed
}
const { rows } = await pool.query('SELECT count(*)::int AS n FROM support_tickets WHERE title = $1', [title]);
console.log('tickets', rows[0].n); // 1

await worker.close();
await Promise.all([queue.close(), events.close()]);
await Promise.all([receipts.quit(), connection.quit(), listening.quit(), pool.end()]);
