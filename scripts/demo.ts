/**
 * The demo: a fleet of real BullMQ worker processes runs a few hundred jobs of
 * tool calls while workers are SIGKILLed mid-effect, then it counts the outbox.
 *
 *   npm run demo
 *
 * Redis: REDIS_URL if set, else a throwaway redis-server on a free port, else
 * it asks you to run `docker compose up -d`.
 *
 *   DEMO_BACKEND=postgres npm run demo         the queue on PostgreSQL (BullMQ 6)
 *   DEMO_REDIS_CLIENT=node-redis npm run demo  receipts (and queue) through node-redis
 *
 * (see scripts/demo-backends.ts).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { ReceiptStore } from '../src/redis/index.js';
import { idempotencyKeyFor } from '../src/bullmq/index.js';
import { duplicateEffects, providerDeduped, readOutbox } from '../examples/outbox-tools.js';
import { ambiguousReceiptLines, DEMO_LEGEND, progressLine } from './demo-report.js';
import { redisForScript } from './demo-redis.js';
import { demoBackend, demoClient, demoQueue, postgresForScript } from './demo-backends.js';

const WORKERS = 4;
const JOBS = 300;
/** How long workers are killed for; the jobs left then drain with no more kills. */
const CHAOS_MS = 30_000;
/** The most the demo waits for every job: far more than a run takes on a slow 2-core machine (about 55 s). */
const DEADLINE_MS = 120_000;
const KILL_EVERY_MS = 700;
const workerScript = fileURLToPath(new URL('./demo-worker.ts', import.meta.url));

const everyWorker = new Set<ChildProcess>();

function spawnWorker(env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const child = fork(workerScript, [], { env, execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  everyWorker.add(child);
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`demo worker exited early (code ${code})`)));
  });
}

/** A turn's tool calls. Every third job is enqueued twice, as a redelivered or retried turn would be. */
function callsFor(i: number) {
  const calls = [{ id: `toolu_${i}_a`, name: 'send_email', input: { to: `user${i}@example.test`, subject: `Order ${i} shipped` } }];
  if (i % 2 === 0) calls.push({ id: `toolu_${i}_b`, name: 'create_ticket', input: { title: `Follow up order ${i}` } as never });
  return calls;
}

async function main(): Promise<void> {
  const started = Date.now();
  const redisServer = await redisForScript('demo');
  const backend = demoBackend();
  const client = demoClient();
  const postgres = backend === 'postgres' ? await postgresForScript() : undefined;
  const prefix = `demo${randomBytes(3).toString('hex')}`;
  // On PostgreSQL there is no key prefix: the run gets a queue of its own.
  const queueName = backend === 'postgres' ? `tool-calls-${prefix}` : 'tool-calls';
  const env = {
    ...process.env,
    REDIS_URL: redisServer.url,
    DEMO_PREFIX: prefix,
    DEMO_QUEUE: queueName,
    DEMO_LEASE_MS: '1500',
    DEMO_BACKEND: backend,
    DEMO_REDIS_CLIENT: client,
    ...(postgres ? { DEMO_POSTGRES_URL: postgres.url } : {}),
  };
  console.log(`Queue on ${backend === 'postgres' ? 'PostgreSQL' : 'Redis'}; receipts on Redis through ${client}.`);
  const redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
  const queue = await demoQueue(queueName, { backend, client, redisUrl: redisServer.url, postgresUrl: postgres?.url, prefix });

  console.log(`Starting ${WORKERS} worker processes (prefix ${prefix}) ...`);
  const fleet = await Promise.all(Array.from({ length: WORKERS }, () => spawnWorker(env)));
  let kills = 0;

  let jobs = 0;
  for (let i = 0; i < JOBS; i++) {
    const data = { tenantId: 'acme', runId: `run-${i % 40}`, calls: callsFor(i) };
    const opts = { attempts: 5, backoff: { type: 'fixed', delay: 200 }, removeOnComplete: false, removeOnFail: false };
    await queue.add('turn', data, opts);
    jobs++;
    if (i % 3 === 0) {
      await queue.add('turn', data, opts);
      jobs++;
    }
  }
  console.log(`Enqueued ${jobs} jobs; SIGKILLing a worker every ${KILL_EVERY_MS} ms while they run ...`);

  const killer = setInterval(() => {
    const victim = Math.floor(Math.random() * fleet.length);
    fleet[victim]?.kill('SIGKILL');
    kills++;
    spawnWorker(env).then(
      (w) => (fleet[victim] = w),
      () => undefined,
    );
  }, KILL_EVERY_MS);

  let counts = await queue.getJobCounts();
  let lastProgress = 0;
  while (Date.now() - started < DEADLINE_MS) {
    counts = await queue.getJobCounts('completed', 'failed', 'active', 'waiting', 'delayed', 'prioritized');
    const done = (counts.completed ?? 0) + (counts.failed ?? 0);
    if (Date.now() - lastProgress >= 2000 || done >= jobs) {
      lastProgress = Date.now();
      console.log(progressLine(done, jobs, kills, Date.now() - started));
    }
    if (done >= jobs) break;
    // Stop the chaos for the tail so stalled jobs can drain.
    if (Date.now() - started > CHAOS_MS) clearInterval(killer);
    await new Promise((r) => setTimeout(r, 250));
  }
  clearInterval(killer);

  const outbox = await readOutbox(redis, prefix);
  const dupes = duplicateEffects(outbox);
  const stats = await redis.hgetall(`${prefix}:demo:stats`);
  const store = new ReceiptStore({ redis, prefix });
  const ambiguous = await store.listAmbiguous();
  // Only the demo can peek at the outbox; the library had no way to know, which is why it refused to guess.
  const sentKeys = new Set(outbox.filter((e) => e.tool === 'send_email').map((e) => e.idempotencyKey));
  const ambiguousSent = ambiguous.filter((r) => sentKeys.has(idempotencyKeyFor(r.key))).length;
  const calls = (await queue.getJobs(['completed'])).reduce((n, j) => n + (j.returnvalue?.results?.length ?? 0), 0);
  const failed = await queue.getJobs(['failed']);
  const reconciledSent = Number(stats['reconciled:completed'] ?? 0);
  const reconciledNotSent = Number(stats['reconciled:not_started'] ?? 0);

  const rows: Array<[string, string | number]> = [
    ['jobs enqueued (1 in 3 twice)', jobs],
    ['jobs completed / failed', `${counts.completed ?? 0} / ${counts.failed ?? 0}`],
    ['workers SIGKILLed', kills],
    ['tool calls answered', calls],
    ['decisions: executed', stats.execute ?? 0],
    ['decisions: replayed', stats.replay ?? 0],
    ['decisions: waited', stats.wait ?? 0],
    ['decisions: ambiguous', stats.ambiguous ?? 0],
    // A receipt can be met as ambiguous more than once (its job enqueued twice, or retried).
    ['interrupted emails settled by reconcile', reconciledSent + reconciledNotSent],
    ['  sent (replayed) / not sent (run again)', `${reconciledSent} / ${reconciledNotSent}`],
    ['  reconcile could not tell', stats['reconciled:unknown'] ?? 0],
    ['LEFT FOR A PERSON (ambiguous receipts)', ambiguous.length],
    ['  of which the email had gone / not', `${ambiguousSent} / ${ambiguous.length - ambiguousSent}`],
    ['attempts fenced out', stats.fencedOut ?? 0],
    ['effects in the outbox', outbox.length],
    ['repeats absorbed by the ticket provider', Object.values(await providerDeduped(redis, prefix)).reduce((a, b) => a + b, 0)],
    ['DUPLICATE EFFECTS', dupes.length],
  ];
  console.log('');
  for (const [label, value] of rows) console.log(`  ${label.padEnd(42)} ${value}`);
  console.log('');
  for (const line of DEMO_LEGEND) console.log(`  ${line}`);
  console.log('');
  if (ambiguous.length > 0) {
    console.log(`Ambiguous receipts (an email may or may not have gone out; not repeated, listed for an operator):`);
    const serverKept = Boolean(process.env.REDIS_URL);
    for (const line of ambiguousReceiptLines(ambiguous, { serverKept })) console.log(line);
    if (!serverKept) console.log('  (read from the throwaway redis-server, which stops with the demo; set REDIS_URL to keep them)');
    console.log(`Failed jobs carry the reason, e.g.: ${failed[0]?.failedReason?.slice(0, 160) ?? '(none)'}`);
  }
  console.log(`Finished in ${((Date.now() - started) / 1000).toFixed(1)} s.`);
  if (process.env.REDIS_URL) {
    console.log(`Everything this run wrote is under the prefix ${prefix}; remove it with:`);
    console.log(`  redis-cli --scan --pattern '${prefix}:*' | xargs -r redis-cli unlink`);
  }

  for (const w of everyWorker) w.kill('SIGKILL');
  await queue.close();
  redis.disconnect();
  await redisServer.stop();
  await postgres?.stop();
  process.exit(dupes.length === 0 ? 0 : 1);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
