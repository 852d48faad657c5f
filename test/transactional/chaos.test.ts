/**
 * Chaos for transactional tools: 300 jobs, each a turn of record_call
 * (transactional: one row keyed by the call) and send_email (opaque, on the
 * outbox), run by real worker processes that are SIGKILLed at random and
 * SIGSTOPped past their lease and resumed (some of them by themselves,
 * inside a call's open transaction, so its takeover must end it), while
 * PostgreSQL is crashed (`pg_ctl stop -m immediate`) and restarted, and Redis
 * (AOF, fsync always) is restarted. Afterwards every job completed, every
 * call has exactly one row, every transactional call was answered with its
 * committed result (never that nothing ran), none was ever ambiguous, and
 * no opaque effect landed twice.
 */
import { randomBytes } from 'node:crypto';
import { Queue, QueueEvents, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { duplicateEffects, readOutbox } from '../../examples/outbox-tools.js';
import type { ToolJobResult } from '../../src/bullmq/index.js';
import { ReceiptStore } from '../../src/redis/index.js';
import { call, CRASH_WORKER_TIMING, jobData } from '../bullmq/fixture.js';
import { faultTestsSupported, startRedis, type RedisHandle } from '../support/redis.js';
import { spawnWorkerProcess, type WorkerProcess } from '../support/worker-process.js';
import { until, usePostgres } from './fixture.js';

const JOBS = 300;
const WORKERS = 3;
const postgres = usePostgres();
let redisHandle: RedisHandle;
beforeAll(async () => {
  redisHandle = await startRedis({ appendonly: true });
});
const workers: WorkerProcess[] = [];
afterAll(async () => {
  for (const w of workers) {
    await w.signal('SIGCONT');
    await w.signal('SIGKILL');
  }
  await redisHandle?.stop();
});

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;

// It restarts Redis: with REDIS_URL (a server it does not own) it is skipped, as every fault test is.
const itRestartingRedis = faultTestsSupported() ? it : it.skip;

itRestartingRedis(
  '300 turns under SIGKILL, SIGSTOP, a PostgreSQL crash and a Redis restart: exactly one row per call, nothing ambiguous, no duplicate email',
  async () => {
    const prefix = `chaos${randomBytes(3).toString('hex')}`;
    const queueName = 'tools';
    // Each connection sees the Redis restart; its reconnect is all the test wants from it.
    const connect = () => new Redis(redisHandle.url, { maxRetriesPerRequest: null }).on('error', () => undefined);
    const redis = connect();
    const queue = new Queue(queueName, { connection: connect(), prefix });
    const events = new QueueEvents(queueName, { connection: connect(), prefix });
    queue.on('error', () => undefined);
    events.on('error', () => undefined);
    const figures = { kills: 0, stops: 0, stopsInside: 0, postgresCrashes: 0, redisRestarts: 0 };
    const spawn = async (slot: number) => {
      const worker = await spawnWorkerProcess('transactional-worker', {
        REDIS_URL: redisHandle.url,
        PREFIX: prefix,
        QUEUE: queueName,
        DATA_URL: postgres.handle().url,
        ...CRASH_WORKER_TIMING,
        CONCURRENCY: '4',
        IDLE_MS: '3000',
        HOLD_MS: '40',
        CRASH_AT: 'none',
        STOP_INSIDE: '0.015',
      });
      // A worker that stopped itself inside an open transaction is resumed past its lease and the BullMQ lock.
      worker.child.on('message', (m: { type?: string }) => {
        if (m.type !== 'stopping-inside') return;
        figures.stopsInside++;
        setTimeout(() => void worker.signal('SIGCONT'), 1_500);
      });
      workers[slot] = worker;
      return worker;
    };
    for (let slot = 0; slot < WORKERS; slot++) await spawn(slot);

    const labels = Array.from({ length: JOBS }, (_, i) => `chaos-${prefix}-${i}`);
    const jobs: Job[] = [];
    let adding = true;
    const feeding = (async () => {
      for (let i = 0; i < JOBS; i += 10) {
        for (const label of labels.slice(i, i + 10)) {
          const data = jobData([
            call('record_call', { label }, `toolu_rec_${label}`),
            call('send_email', { to: 'ops@example.com', subject: label, body: '' }, `toolu_mail_${label}`),
          ]);
          for (;;) {
            try {
              jobs.push(await queue.add('turn', data, { attempts: 100, backoff: { type: 'fixed', delay: 200 } }));
              break;
            } catch {
              await pause(100); // Redis restarting
            }
          }
        }
        await pause(400);
      }
      adding = false;
    })();

    const chaos = (async () => {
      let round = 0;
      while (adding || round < 16) {
        round++;
        await pause(300 + Math.random() * 400);
        if (round === 5) {
          await postgres.handle().crashAndRestart();
          figures.postgresCrashes++;
          continue;
        }
        if (round === 10) {
          await redisHandle.restart();
          figures.redisRestarts++;
          continue;
        }
        const slot = Math.floor(Math.random() * WORKERS);
        const victim = workers[slot]!;
        if (Math.random() < 0.65) {
          await victim.signal('SIGKILL');
          figures.kills++;
          await spawn(slot);
        } else {
          await victim.signal('SIGSTOP');
          figures.stops++;
          await pause(1_500); // past the 600 ms lease and the 1 s BullMQ lock
          await victim.signal('SIGCONT');
        }
      }
    })();
    await Promise.all([feeding, chaos]);

    // Every job completes: wait on the queue's own counts, not on wall-clock guesses.
    await until(async () => (await queue.getJobCounts('completed')).completed === JOBS, 'every job completed', 60_000);
    const reloaded = await Promise.all(jobs.map((j) => queue.getJob(j.id!)));
    const results = reloaded.map((j) => (j!.returnvalue as ToolJobResult).results);

    const { rows } = await postgres
      .admin()
      .query('SELECT call, count(*)::int AS n FROM tickets WHERE call LIKE $1 GROUP BY call', [`chaos-${prefix}-%`]);
    const rowsPerCall = new Map(rows.map((r: { call: string; n: number }) => [r.call, r.n]));
    const notOnce = labels.filter((label) => rowsPerCall.get(label) !== 1);
    const recordOutcomes = results.map((r) => r[0]!.outcome);
    const store = new ReceiptStore({ redis, prefix });
    const ambiguousTransactional = (await store.listAmbiguous()).filter((r) => r.key.toolName === 'record_call');
    const emailOutcomes = results.map((r) => r[1]!.outcome);
    const records = (await Promise.all(reloaded.map((j) => store.listRun(j!.data.tenantId, j!.data.runId)))).flat();
    const settledFromPostgres = records.filter(
      (r) => r.key.toolName === 'record_call' && r.history.some((e) => e.note?.startsWith('settled from PostgreSQL')),
    ).length;
    const duplicates = duplicateEffects((await readOutbox(redis, prefix)).filter((e) => e.tool === 'send_email'));
    console.log(
      `chaos: ${JOBS} jobs, ${figures.kills} SIGKILLs, ${figures.stops} SIGSTOPs (and ${figures.stopsInside} inside an open transaction), ` +
        `${figures.postgresCrashes} PostgreSQL crash, ` +
        `${figures.redisRestarts} Redis restart; record_call ${count(recordOutcomes)} (${settledFromPostgres} settled from PostgreSQL ` +
        `after a lost lease); send_email ${count(emailOutcomes)}`,
    );

    expect(figures.kills + figures.stops).toBeGreaterThanOrEqual(10);
    expect(figures).toMatchObject({ postgresCrashes: 1, redisRestarts: 1 });
    expect(notOnce).toEqual([]);
    expect(figures.stopsInside).toBeGreaterThanOrEqual(1);
    expect(recordOutcomes.filter((o) => o !== 'executed' && o !== 'replayed')).toEqual([]);
    // Every transactional call was answered with what its one row committed (its label, by the attempt that wrote
    // it), never with a failure text.
    const written = await postgres
      .admin()
      .query('SELECT call, attempt FROM tickets WHERE call LIKE $1', [`chaos-${prefix}-%`])
      .then(({ rows }) => new Map(rows.map((r: { call: string; attempt: number }) => [r.call, r.attempt])));
    const answered = reloaded.map((job, i) => ({
      label: (job!.data.calls[0]!.input as { label: string }).label,
      content: results[i]![0]!.content,
    }));
    expect(answered.filter(({ label, content }) => content !== JSON.stringify({ label, writtenBy: written.get(label) }))).toEqual([]);
    expect(ambiguousTransactional).toEqual([]);
    expect(duplicates).toEqual([]);

    await Promise.all([queue.close(), events.close()]);
    redis.disconnect();
  },
  150_000,
);

function count(outcomes: readonly string[]): string {
  const tally = new Map<string, number>();
  for (const o of outcomes) tally.set(o, (tally.get(o) ?? 0) + 1);
  return [...tally].map(([o, n]) => `${o} ${n}`).join(', ');
}
