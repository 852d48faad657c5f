/**
 * Worker processes racing on one tenant's limit of N over 10·N calls, on one
 * Redis server and on a three-master Cluster whose limit key and run keys sit
 * on different masters: first through the store by hand, then through the
 * real wrapper (eight BullMQ workers, concurrency 10, see {@link wrapperRace}).
 * Over 300 lines: both races share their setup, on one server and on a Cluster. Processes are SIGKILLed mid-race, some holding a call
 * right after its reserve or its claim (before the bind), others at random;
 * a second round runs the refused calls again once the reservations of the
 * dead are past their deadline. Exactly N calls are bound and counted, never
 * more; every effect the counting tool recorded is of a bound call; a
 * reservation the dead held before their claim is given back and can never
 * be bound, and one held after it keeps its share. Through the wrapper, the
 * dead's jobs are redelivered and reuse their own reservations, so the first
 * round alone executes exactly N.
 */
import { randomBytes } from 'node:crypto';
import { Queue, type Job } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import type { ToolJobResult } from '../../src/bullmq/index.js';
import { describe, expect, it } from 'vitest';
import { defineLimit, LimitStore, limitBindingField, type LimitDefinition, type LimitReservation } from '../../src/limits/index.js';
import { receiptRedisKey } from '../../src/redis/keys.js';
import { raceClusterSkipReason, useRaceCluster } from '../support/race-cluster.js';
import { useRedis, waitUntil } from '../support/redis-fixture.js';
import { spawnWorkerProcess, type WorkerMessage } from '../support/worker-process.js';
import { YEAR_MS } from '../support/limit-windows.js';

const N = 24;
const CALLS = 10 * N;
const RESERVATION_MS = 1500;

interface RaceSetup {
  /** REDIS_URL or CLUSTER_SEED for the worker processes. */
  readonly connectionEnv: Record<string, string>;
  readonly prefix: string;
  /** The test's own connection, for its reads. */
  readonly redis: Redis | Cluster;
  readonly tenant: string;
  readonly runs: readonly string[];
}

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the race of the file's description and checks what it must leave behind. */
async function storeRace(setup: RaceSetup): Promise<{ killedHolding: WorkerMessage[] }> {
  const id = randomBytes(4).toString('hex');
  const keys = {
    QUEUE: `${setup.prefix}:race:${id}:queue`,
    EFFECTS: `${setup.prefix}:race:${id}:effects`,
    REFUSED: `${setup.prefix}:race:${id}:refused`,
  };
  const definition: LimitDefinition = { name: 'emails', per: 'tenant', max: N, windowMs: YEAR_MS };
  const limit = defineLimit(definition);
  const store = new LimitStore({ redis: setup.redis, prefix: setup.prefix, reservationMs: RESERVATION_MS });
  await setup.redis.rpush(keys.QUEUE, ...Array.from({ length: CALLS }, (_, i) => String(i)));
  const env = (holdChance: number) => ({
    ...setup.connectionEnv,
    ...keys,
    PREFIX: setup.prefix,
    LIMIT: JSON.stringify(definition),
    RESERVATION_MS: String(RESERVATION_MS),
    TENANT: setup.tenant,
    RUNS: JSON.stringify(setup.runs),
    CONCURRENCY: '10',
    HOLD_CHANCE: String(holdChance),
  });
  const spawn = (holdChance: number) => spawnWorkerProcess('limit-worker', env(holdChance));

  // Round one: four processes. Two first take a call each alone and hold it before its bind.
  const [early, late, random, survivor] = await Promise.all([spawn(0.15), spawn(0.15), spawn(0.1), spawn(0)]);
  const processes = [early!, late!, random!, survivor!];
  early!.child.send({ type: 'first', stage: 'reserved' });
  await early!.waitFor((m) => m.type === 'holding');
  late!.child.send({ type: 'first', stage: 'claimed' });
  await late!.waitFor((m) => m.type === 'holding');
  for (const p of processes) p.child.send({ type: 'go' });
  await Promise.all([
    early!.signal('SIGKILL'),
    delay(Math.random() * 300).then(() => late!.signal('SIGKILL')),
    delay(Math.random() * 300).then(() => random!.signal('SIGKILL')),
  ]);
  await survivor!.waitFor((m) => m.type === 'drained', 60_000);
  // The survivor's random holds never end: it dies too, and so do its held calls.
  await Promise.all(processes.map((p) => p.signal('SIGKILL')));
  for (const p of processes) expect(p.messages.filter((m) => m.type === 'failed')).toEqual([]);
  expect(await setup.redis.llen(keys.QUEUE)).toBe(0);

  // Past every dead reservation's deadline, a settle gives back what was not bound, and commits what was.
  const killedAt = (await store.usage(limit, { tenantId: setup.tenant })).nowMs;
  await waitUntil(
    () => store.usage(limit, { tenantId: setup.tenant }),
    (u) => u.nowMs > killedAt + RESERVATION_MS,
    15_000,
    'the deadlines',
  );
  await store.settleExpired(limit, { tenantId: setup.tenant });
  const held = processes.flatMap((p) => p.messages.filter((m) => m.type === 'holding'));
  expect(held.map((m) => m.stage)).toEqual(expect.arrayContaining(['reserved', 'claimed']));
  for (const hold of held) {
    const reservation = hold.reservation as LimitReservation;
    // Held before its claim: revoked for good. Held after its claim (its attempt started, so for all anyone
    // knows it may have run, as an ambiguous call may) or after its bind: bound, so counted.
    expect({ stage: hold.stage, bind: (await store.bind(reservation)).kind }).toEqual({
      stage: hold.stage,
      bind: hold.stage === 'reserved' ? 'revoked' : 'bound',
    });
  }
  const afterFirst = await boundAndCounted(setup, store, limit);
  expect(afterFirst.pending).toBe(0);
  expect(afterFirst.committed).toBeLessThanOrEqual(N);

  // Round two: the refused calls again, on two fresh processes, until the window is full.
  const refused = await setup.redis.smembers(keys.REFUSED);
  expect(refused.length).toBeGreaterThan(N);
  await setup.redis.del(keys.REFUSED);
  await setup.redis.rpush(keys.QUEUE, ...refused);
  const second = await Promise.all([spawn(0), spawn(0)]);
  for (const p of second) p.child.send({ type: 'go' });
  await Promise.all(second.map((p) => p.waitFor((m) => m.type === 'drained', 60_000)));
  await Promise.all(second.map((p) => p.signal('SIGKILL')));
  await store.settleExpired(limit, { tenantId: setup.tenant });
  const final = await boundAndCounted(setup, store, limit);
  expect(final).toMatchObject({ committed: N, pending: 0, bound: N, left: 0 });
  // Each call of round two was refused again, or counted, or (had its claim been slower than the bound) not bound.
  const notBound = second.flatMap((p) => p.messages.filter((m) => m.type === 'not-bound')).length;
  expect(refused.length - (await setup.redis.scard(keys.REFUSED))).toBe(N - afterFirst.committed + notBound);
  return { killedHolding: held };

  /** The count, and the calls whose receipts are bound: equal, and every effect among them. */
  async function boundAndCounted(s: RaceSetup, limits: LimitStore, l: typeof limit) {
    const usage = await limits.usage(l, { tenantId: s.tenant });
    const field = limitBindingField(l.name);
    const boundCalls = new Set<string>();
    for (let i = 0; i < CALLS; i++) {
      const receipt = receiptRedisKey(s.prefix, {
        tenantId: s.tenant,
        runId: s.runs[i % s.runs.length]!,
        toolName: 'send_email',
        argsHash: `h${i}`,
      });
      if ((await s.redis.hget(receipt, field)) !== null) boundCalls.add(String(i));
    }
    const effects = await s.redis.smembers(keys.EFFECTS);
    expect(effects.filter((e) => !boundCalls.has(e))).toEqual([]);
    expect(usage.committed).toBe(boundCalls.size);
    return { committed: usage.committed, pending: usage.pending, left: usage.left, bound: boundCalls.size };
  }
}

/** How long each wrapper race's round may take to finish its jobs. */
const ROUND_MS = 90_000;

/** Waits until every job of `round` finished, and returns them. */
async function finishedRound(queue: Queue, round: string, count: number): Promise<Job[]> {
  const jobs = await waitUntil(
    async () => (await queue.getJobs(['completed', 'failed'])).filter((j) => j.id?.startsWith(`${round}-`)),
    (found) => found.length === count,
    ROUND_MS,
    `the jobs of ${round}`,
  );
  expect(jobs.filter((j) => j.failedReason !== undefined).map((j) => j.failedReason)).toEqual([]);
  return jobs;
}

/**
 * The race through the wrapper: eight `limit-wrapper-worker` processes,
 * concurrency 10 each, over 10·N one-call jobs of one tenant whose limit
 * refuses past N; three are SIGKILLed at random moments and replaced. Every
 * job completes, executed (or replayed, a redelivery of an executed call) or
 * refused with the limit's sentence; exactly N execute: never more, and never
 * fewer for the library's own dead reservations, since a redelivered job
 * reuses the one its dead worker made. The refused calls then run again and
 * are refused again: the count, the jobs' outcomes and the tool's effects agree.
 */
async function wrapperRace(setup: RaceSetup & { readonly bull: Redis | Cluster; readonly bullPrefix: string }): Promise<void> {
  const id = randomBytes(4).toString('hex');
  const n = 10;
  const effectsKey = `${setup.prefix}:wrap:${id}:effects`;
  const definition: LimitDefinition = { name: `calls-${id}`, per: 'tenant', max: n, windowMs: YEAR_MS };
  const limit = defineLimit(definition);
  const store = new LimitStore({ redis: setup.redis, prefix: setup.prefix });
  const queue = new Queue(`limits-${id}`, { connection: setup.bull, prefix: setup.bullPrefix });
  const spawn = () =>
    spawnWorkerProcess('limit-wrapper-worker', {
      ...setup.connectionEnv,
      PREFIX: setup.prefix,
      BULL_PREFIX: setup.bullPrefix,
      QUEUE: queue.name,
      LIMIT: JSON.stringify(definition),
      RESERVATION_MS: String(RESERVATION_MS),
      EFFECTS: effectsKey,
      CONCURRENCY: '10',
    });
  const add = (numbers: readonly number[], round: string) =>
    queue.addBulk(
      numbers.map((i) => ({
        name: 'call',
        data: {
          tenantId: setup.tenant,
          runId: setup.runs[i % setup.runs.length]!,
          calls: [{ id: `toolu_${i}`, name: 'send_email', input: { n: i } }],
        },
        opts: { jobId: `${round}-${i}`, attempts: 5, backoff: { type: 'fixed', delay: 100 } },
      })),
    );
  const outcomeOf = (job: Job) => (job.returnvalue as ToolJobResult).results[0]!;
  const numberOf = (job: Job) => Number(job.id!.split('-')[1]);
  const workers = await Promise.all(Array.from({ length: 8 }, spawn));
  try {
    await add(
      Array.from({ length: 10 * n }, (_, i) => i),
      'r1',
    );
    await Promise.all(
      [0, 1, 2].map(async (i) => {
        await delay(Math.random() * 1000);
        await workers[i]!.signal('SIGKILL');
        workers.push(await spawn());
      }),
    );
    const first = await finishedRound(queue, 'r1', 10 * n);
    const ran = first.filter((j) => ['executed', 'replayed'].includes(outcomeOf(j).outcome));
    const refused = first.filter((j) => outcomeOf(j).outcome === 'rejected');
    expect(ran.length + refused.length).toBe(10 * n);
    expect(ran.length).toBe(n);
    for (const job of refused) expect(outcomeOf(job).content).toContain(`the limit "${limit.name}"`);
    expect((await setup.redis.smembers(effectsKey)).length).toBeLessThanOrEqual(n);

    // Past the bound of the reservations the dead held, what they held unbound is given back.
    await delay(RESERVATION_MS + 500);
    await store.settleExpired(limit, { tenantId: setup.tenant });
    const settled = await store.usage(limit, { tenantId: setup.tenant });
    expect(settled.pending).toBe(0);
    expect(settled.committed).toBe(ran.length);
    const second = await finishedRound(queue, 'r2', (await add(refused.map(numberOf), 'r2')).length);
    const ranSecond = second.filter((j) => outcomeOf(j).outcome === 'executed');
    expect(ranSecond).toEqual([]);
    const executed = [...ran, ...ranSecond].map((j) => String(numberOf(j))).sort();
    expect((await setup.redis.smembers(effectsKey)).sort()).toEqual(executed);
    expect(await store.usage(limit, { tenantId: setup.tenant })).toMatchObject({ committed: n, pending: 0, left: 0 });
  } finally {
    await Promise.all(workers.map((w) => w.signal('SIGKILL')));
    await queue.close();
  }
}

describe('worker processes racing on one Redis server', () => {
  const fixture = useRedis();

  it('count exactly N of 10·N calls, with workers SIGKILLed before and after their binds', async () => {
    const { killedHolding } = await storeRace({
      connectionEnv: { REDIS_URL: fixture.handle().url },
      prefix: fixture.handle().prefix,
      redis: fixture.connect(),
      tenant: `tenant-${randomBytes(3).toString('hex')}`,
      runs: ['run-a', 'run-b', 'run-c', 'run-d'],
    });
    expect(killedHolding.length).toBeGreaterThanOrEqual(2);
  }, 120_000);

  it('execute exactly N of 10·N calls through the wrapper, eight workers of concurrency 10, some SIGKILLed', async () => {
    await wrapperRace({
      connectionEnv: { REDIS_URL: fixture.handle().url },
      prefix: fixture.handle().prefix,
      redis: fixture.connect(),
      bull: fixture.connect(),
      bullPrefix: `${fixture.handle().prefix}bull`,
      tenant: `tenant-${randomBytes(3).toString('hex')}`,
      runs: ['run-a', 'run-b', 'run-c', 'run-d'],
    });
  }, 240_000);
});

const skipReason = raceClusterSkipReason('the limit race');

describe.skipIf(skipReason !== undefined)('worker processes racing on a three-master Redis Cluster', () => {
  const race = useRaceCluster();

  /** A tenant, and four runs whose receipts and bindings live on the two masters its limit `name` does not: two on each. */
  async function tenantAndRuns(redis: Cluster, name: string): Promise<{ tenant: string; runs: string[] }> {
    const cluster = race.cluster();
    const tenant = `tenant-${randomBytes(3).toString('hex')}`;
    const store = new LimitStore({ redis, prefix: cluster.prefix });
    const limitNode = await cluster.ownerOf(
      store.keysOf(defineLimit({ name, per: 'tenant', max: N, windowMs: YEAR_MS }), { tenantId: tenant }).state,
    );
    const runs: string[] = [];
    const perNode = new Map<string, number>();
    for (let i = 0; runs.length < 4; i++) {
      if (i > 500) throw new Error('found no runs on the other masters');
      const runId = `run-${i}`;
      const node = await cluster.ownerOf(
        receiptRedisKey(cluster.prefix, { tenantId: tenant, runId, toolName: 'send_email', argsHash: 'h0' }),
      );
      if (node === limitNode || (perNode.get(node) ?? 0) >= 2) continue;
      perNode.set(node, (perNode.get(node) ?? 0) + 1);
      runs.push(runId);
    }
    expect(perNode.size).toBe(2);
    return { tenant, runs };
  }

  it('count exactly N, with the tenant limit on one master and the runs on the other two', async () => {
    const { connectionEnv, prefix, redis } = race.connections();
    await storeRace({ connectionEnv, prefix, redis, ...(await tenantAndRuns(redis, 'emails')) });
  }, 180_000);

  it('execute exactly N through the wrapper, with the tenant limit and the runs on different masters', async () => {
    const connections = race.connections();
    // The wrapper race names its limit itself; the tenant's hash tag alone places the limit's keys.
    await wrapperRace({ ...connections, ...(await tenantAndRuns(connections.redis, 'emails')) });
  }, 300_000);
});
