/**
 * An in-flight cap of k = 3 per tenant through the real wrapper: eight
 * `limit-wrapper-worker` processes of concurrency 10 over 100 one-call jobs
 * of one tenant, three of them SIGKILLed at random moments and replaced, on
 * one Redis server and on a three-master Cluster (BullMQ on it too, the
 * tenant's cap on another master than half its runs). The tool records its
 * own overlap in Redis (in flight on entry and exit, the most ever seen); a
 * killed process's executions are taken off once it is dead, while their
 * slots stay held until their leases pass. The recorded overlap never
 * exceeds k; with `wait` every call executes, each effect once; with
 * `refuse`, every call executes once or is refused with the cap's sentence.
 * The tool is resumable: a step its worker was killed in before it was
 * recorded runs again on the next delivery, so a step may run twice only
 * when a run of it was a killed process's.
 */
import { randomBytes } from 'node:crypto';
import { Queue, type Job } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { ToolJobResult } from '../../src/bullmq/index.js';
import type { InFlightCapDefinition } from '../../src/limits/index.js';
import { raceClusterSkipReason, useRaceCluster } from '../support/race-cluster.js';
import { useRedis, waitUntil } from '../support/redis-fixture.js';
import { spawnWorkerProcess, type WorkerProcess } from '../support/worker-process.js';

const K = 3;
const CALLS = 100;
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface CapRaceSetup {
  /** REDIS_URL or CLUSTER_SEED for the worker processes. */
  readonly connectionEnv: Record<string, string>;
  readonly prefix: string;
  /** The test's own connection, for its reads. */
  readonly redis: Redis | Cluster;
  /** BullMQ's connection and prefix. */
  readonly bull: Redis | Cluster;
  readonly bullPrefix: string;
  readonly tenant: string;
  readonly runs: readonly string[];
}

/** Runs the race of the file's description under `onLimit`, and returns the jobs' outcomes and the overlap seen. */
async function capRace(setup: CapRaceSetup, onLimit: 'wait' | 'refuse') {
  const id = randomBytes(4).toString('hex');
  const overlap = `${setup.prefix}:cap:{ov-${id}}`;
  const effectsKey = `${overlap}:effects`;
  const definition: InFlightCapDefinition = { name: `browse-${id}`, per: 'tenant', concurrency: K, onLimit };
  const queue = new Queue(`caps-${id}`, { connection: setup.bull, prefix: setup.bullPrefix });
  const spawn = () =>
    spawnWorkerProcess('limit-wrapper-worker', {
      ...setup.connectionEnv,
      PREFIX: setup.prefix,
      BULL_PREFIX: setup.bullPrefix,
      QUEUE: queue.name,
      LIMIT: JSON.stringify(definition),
      EFFECTS: effectsKey,
      OVERLAP: overlap,
      HOLD_MS: '150',
      // A lease a loaded machine's event loop cannot outlast: a live worker whose lease passed would be counted off.
      LEASE_MS: '3000',
      // And a BullMQ lock as long: with 1 s, a live worker stalled past half of it under the full suite lost a
      // job's lock, and that attempt failed (retried and run once, but a failed attempt all the same).
      LOCK_MS: '3000',
      STALLED_MS: '1000',
      CONCURRENCY: '10',
    });
  /** The pids of the workers killed: a step they ran may run again (see the file's description). */
  const killed = new Set<string>();
  /** SIGKILLs `worker`, then takes its executions off the in-flight count (their slots stay held until their leases pass). */
  const kill = async (worker: WorkerProcess) => {
    killed.add(String(worker.child.pid));
    await worker.signal('SIGKILL');
    const script = `local mine = tonumber(redis.call('GET', KEYS[2]) or '0') redis.call('DECRBY', KEYS[1], mine) redis.call('DEL', KEYS[2]) return mine`;
    await setup.redis.eval(script, 2, `${overlap}:now`, `${overlap}:pid:${worker.child.pid}`);
  };
  const workers = await Promise.all(Array.from({ length: 8 }, spawn));
  try {
    await queue.addBulk(
      Array.from({ length: CALLS }, (_, i) => ({
        name: 'call',
        data: {
          tenantId: setup.tenant,
          runId: setup.runs[i % setup.runs.length]!,
          calls: [{ id: `toolu_${i}`, name: 'send_email', input: { n: i } }],
        },
        opts: { jobId: `c-${i}`, attempts: 5, backoff: { type: 'fixed', delay: 100 } },
      })),
    );
    await Promise.all(
      [0, 1, 2].map(async (i) => {
        await delay(300 + Math.random() * 3000);
        await kill(workers[i]!);
        workers.push(await spawn());
      }),
    );
    const jobs = await waitUntil(
      () => queue.getJobs(['completed', 'failed']),
      (found) => found.length === CALLS,
      240_000,
      'every job to finish',
    );
    expect(jobs.filter((j: Job) => j.failedReason !== undefined).map((j) => j.failedReason)).toEqual([]);
    const outcomes = jobs.map((j: Job) => ({ n: Number(j.id!.slice(2)), ...(j.returnvalue as ToolJobResult).results[0]! }));
    const steps = (await setup.redis.lrange(`${overlap}:log`, 0, -1)).map((entry) => entry.split(':') as [string, string]);
    // Never more than k at once, and the cap was used: k ran together at some point.
    expect(Number(await setup.redis.get(`${overlap}:max`))).toBeLessThanOrEqual(K);
    expect(Number(await setup.redis.get(`${overlap}:max`))).toBeGreaterThanOrEqual(onLimit === 'wait' ? K : 1);
    // None twice: no call's step ran twice in live processes, and the effects are those of the calls that executed.
    const liveRuns = new Map<string, number>();
    for (const [n, pid] of steps) if (!killed.has(pid)) liveRuns.set(n, (liveRuns.get(n) ?? 0) + 1);
    expect([...liveRuns].filter(([, runs]) => runs > 1)).toEqual([]);
    const ran = outcomes.filter((o) => o.outcome === 'executed' || o.outcome === 'replayed');
    const byNumber = (a: number, b: number) => a - b;
    expect([...new Set(steps.map(([n]) => Number(n)))].sort(byNumber)).toEqual(ran.map((o) => o.n).sort(byNumber));
    expect((await setup.redis.smembers(effectsKey)).map(Number).sort(byNumber)).toEqual(ran.map((o) => o.n).sort(byNumber));
    const refused = outcomes.filter((o) => o.outcome === 'rejected');
    expect(outcomes.filter((o) => !['executed', 'replayed', 'rejected'].includes(o.outcome))).toEqual([]);
    expect(ran.length + refused.length).toBe(CALLS);
    for (const o of refused) expect(o.content).toContain(`the in-flight cap "${definition.name}" (at most ${K} at once per tenant)`);
    return { ran: ran.length, refused: refused.length, max: Number(await setup.redis.get(`${overlap}:max`)) };
  } finally {
    await Promise.all(workers.map((w) => w.signal('SIGKILL')));
    await queue.close();
  }
}

describe('an in-flight cap of 3 per tenant, eight worker processes racing on one Redis server', () => {
  const fixture = useRedis();
  const setup = (): CapRaceSetup => ({
    connectionEnv: { REDIS_URL: fixture.handle().url },
    prefix: fixture.handle().prefix,
    redis: fixture.connect(),
    bull: fixture.connect(),
    bullPrefix: `${fixture.handle().prefix}bull`,
    tenant: `tenant-${randomBytes(3).toString('hex')}`,
    runs: ['run-a', 'run-b', 'run-c', 'run-d'],
  });

  it('never runs more than 3 at once, and with wait runs every call once, workers SIGKILLed at random', async () => {
    const seen = await capRace(setup(), 'wait');
    console.log(`cap race (one server, wait): ${seen.ran} ran, most in flight ${seen.max}`);
    expect(seen).toMatchObject({ ran: CALLS, refused: 0 });
  }, 300_000);

  it('with refuse, runs each call once or refuses it with the cap’s sentence, never more than 3 at once', async () => {
    const seen = await capRace(setup(), 'refuse');
    console.log(`cap race (one server, refuse): ${seen.ran} ran, ${seen.refused} refused, most in flight ${seen.max}`);
    expect(seen.ran).toBeGreaterThanOrEqual(K);
    expect(seen.refused).toBeGreaterThan(0);
  }, 300_000);
});

const skipReason = raceClusterSkipReason('the cap race');

describe.skipIf(skipReason !== undefined)('an in-flight cap of 3 per tenant, on a three-master Redis Cluster', () => {
  const race = useRaceCluster();

  it('never runs more than 3 at once, and with wait runs every call once, workers SIGKILLed at random', async () => {
    const runs = Array.from({ length: 8 }, (_, i) => `run-${i}`);
    const seen = await capRace({ ...race.connections(), tenant: `tenant-${randomBytes(3).toString('hex')}`, runs }, 'wait');
    console.log(`cap race (Cluster, wait): ${seen.ran} ran, most in flight ${seen.max}`);
    expect(seen).toMatchObject({ ran: CALLS, refused: 0 });
  }, 360_000);
});
