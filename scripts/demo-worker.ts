/**
 * One worker process of the demo fleet. Started (and SIGKILLed) by
 * scripts/demo.ts and examples/agent-loop.ts; reads its settings from the
 * environment. With DEMO_FREEZE_ONCE_AT=<tool>:<part>, the first worker of
 * the fleet to land that part of an effect tells its parent (`mid-call`) and
 * freezes there, for the parent to SIGKILL. DEMO_BACKEND and
 * DEMO_REDIS_CLIENT choose where the queue lives and which client the
 * receipts go through (scripts/demo-backends.ts).
 */
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { withToolReceipts } from '../src/bullmq/index.js';
import { outboxTools } from '../examples/outbox-tools.js';
import { demoBackend, demoClient, demoWorker, receiptsConnection } from './demo-backends.js';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = process.env.DEMO_PREFIX ?? 'demo';
const queueName = process.env.DEMO_QUEUE ?? 'tool-calls';
const leaseMs = Number(process.env.DEMO_LEASE_MS ?? 1500);

const redis = new Redis(url, { maxRetriesPerRequest: null });
const freezeAt = process.env.DEMO_FREEZE_ONCE_AT;
// send_email's reconcile asks the outbox (the demo's email provider) whether the message went out.
const { sendEmail, createTicket } = outboxTools(redis, prefix, {
  effectMs: Number(process.env.DEMO_EFFECT_MS ?? 250),
  reconcileEmail: process.env.DEMO_RECONCILE !== '0',
  hooks: {
    async afterEffect(tool, part, ctx) {
      if (`${tool}:${part}` !== freezeAt) return;
      // Once per fleet: the worker that takes the call over must not freeze too.
      if ((await redis.set(`${prefix}:demo:froze`, process.pid, 'NX')) !== 'OK') return;
      process.send?.({ type: 'mid-call', tool, part, callId: ctx.callId, attempt: ctx.attempt, pid: process.pid });
      await new Promise(() => undefined);
    },
  },
});
const where = {
  backend: demoBackend(),
  client: demoClient(),
  redisUrl: url,
  postgresUrl: process.env.DEMO_POSTGRES_URL,
  prefix,
};
const processor = withToolReceipts({
  redis: await receiptsConnection(where.client, url),
  tools: [sendEmail, createTicket],
  prefix,
  leaseMs,
  waitJitterMs: 200,
  logger: pino({ level: process.env.DEMO_LOG_LEVEL ?? 'silent' }),
});
const stats = `${prefix}:demo:stats`;
processor.events.on('decision', (e) => void redis.hincrby(stats, e.decision, 1));
processor.events.on('fencedOut', () => void redis.hincrby(stats, 'fencedOut', 1));
processor.events.on('reconciled', (e) => void redis.hincrby(stats, `reconciled:${e.verdict}`, 1));

const worker = await demoWorker(queueName, processor, where, {
  concurrency: 4,
  // Short locks and stall checks so a killed worker's jobs come back within seconds.
  lockDuration: 2000,
  stalledInterval: 1000,
  maxStalledCount: 100,
});
processor.attach(worker);
worker.on('error', () => undefined);
worker.on('ready', () => process.send?.({ type: 'ready' }));

// Die with the parent: an orphaned worker would keep taking jobs.
process.on('disconnect', () => process.exit(0));
