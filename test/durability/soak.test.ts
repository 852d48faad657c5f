/**
 * Failover soak: two workers run jobs of opaque and resumable calls while the
 * harness forces a failover at a third and two thirds of the way through: a
 * replica falls behind for a moment, its master is SIGKILLed, the replica is
 * promoted and the old master rejoins as its replica. On Sentinel and on a
 * Cluster (a different master each time), durability off then on, on the
 * same servers. Effects land in an outbox in this process, so they
 * survive every failover and can be counted (see `Outbox` for what counts as
 * a duplicate); the figures are printed. With durability on there must be no
 * duplicate effect, and every call completed or was reported ambiguous. With
 * it off the test only reports what happened: how many duplicates a run
 * gives depends on timing.
 */
import { Queue } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DurabilityOptions } from '../../src/redis/index.js';
import type { LocalRedis } from '../support/redis-process.js';
import { startRedisCluster, waitCaughtUp, withNode, type RedisClusterHandle } from '../support/redis-cluster.js';
import { sentinelSkipReason, startSentinelSet, type SentinelSetHandle } from '../support/redis-sentinel.js';
import { Outbox, createTicketTool, failoverWorker, sendEmailTool, type FailoverWorker } from './support.js';

const skip = sentinelSkipReason();
const JOBS = 40;
const FAILOVERS = 2;
const SETTLE_DEADLINE_MS = 60_000;
/** How long the replica falls behind before each failover. */
const LAG_MS = 400;

interface Figures {
  readonly backend: string;
  readonly mode: string;
  readonly failovers: number;
  readonly calls: number;
  readonly completed: number;
  readonly ambiguous: number;
  readonly otherFailures: string[];
  readonly duplicates: number;
  /** Resumable steps run again because they were cut off before their record was acknowledged (allowed). */
  readonly redone: number;
}

/** Where a soak runs, and how it forces a failover there. */
interface Backend {
  readonly name: string;
  connect(options: { maxRetriesPerRequest: number | null }): Redis | Cluster;
  readonly prefix: string;
  readonly bullPrefix: string;
  /** Waits until the replicas have everything written so far. */
  synced(): Promise<void>;
  failover(): Promise<void>;
}

const figures: Figures[] = [];
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await pause(100);
  }
}

afterAll(() => {
  for (const f of figures) {
    console.log(
      `[failover soak] ${f.backend}, durability ${f.mode}: ${f.failovers} failovers, ${f.calls} calls, ${f.completed} completed, ` +
        `${f.ambiguous} ambiguous, ${f.otherFailures.length} failed otherwise, ${f.duplicates} duplicate effects ` +
        `(and ${f.redone} resumable steps redone after being cut off before their record landed)`,
    );
  }
});

describe.skipIf(skip !== undefined)('failover soak on Sentinel', () => {
  let set: SentinelSetHandle;
  let backend: Backend;
  beforeAll(async () => {
    set = await startSentinelSet();
    backend = {
      name: 'sentinel',
      connect: (options) => set.connect(options),
      prefix: set.prefix,
      bullPrefix: set.prefix,
      async synced() {
        const master = await set.master();
        await set.waitForSync(master, set.replicaOf(master));
      },
      /**
       * The replica lags (SIGSTOPped and cut off for a moment, as a slow
       * network would leave it), the master dies, the replica is promoted,
       * and the old master rejoins as its replica.
       */
      async failover() {
        const master = await set.master();
        const replica = set.replicaOf(master);
        await set.cutOff(replica);
        await pause(LAG_MS);
        await master.kill();
        await replica.resume();
        await set.waitForMaster(replica);
        await set.rejoin(master);
      },
    };
  });
  afterAll(async () => {
    await set?.stop();
  });

  it('durability off: runs, and reports what the failovers cost', async () => {
    const off = await soak(backend, 'off', undefined);
    expect(off.failovers).toBe(FAILOVERS);
  });

  it('durability on: no duplicate effect, and every call completed or reported ambiguous', async () => {
    expectClean(await soak(backend, 'on', { replicas: 1, timeoutMs: 500 }));
  });
});

describe.skipIf(skip !== undefined)('failover soak on a Cluster', () => {
  let cluster: RedisClusterHandle;
  let backend: Backend;
  beforeAll(async () => {
    cluster = await startRedisCluster(3, { replicas: 1, nodeTimeoutMs: 2000 });
    // Pairs of a master and its replica, in either order: roles are read from the servers.
    const pairs = cluster.nodes.map((m, i) => [m, cluster.replicas[i]!] as [LocalRedis, LocalRedis]);
    const role = async (n: LocalRedis) => /role:(\w+)/.exec(await withNode(n, (a) => a.info('replication')))?.[1];
    backend = {
      name: 'cluster',
      connect: (options) => cluster.connect(options),
      prefix: cluster.prefix,
      bullPrefix: '{bull}',
      async synced() {
        for (const pair of pairs) {
          const [master, replica] = (await role(pair[0])) === 'master' ? pair : [pair[1], pair[0]];
          await waitCaughtUp(master, replica);
        }
      },
      /**
       * As on Sentinel, for the master holding BullMQ's queue (so jobs are
       * redelivered, as with Sentinel) and a third of the runs; its replica
       * takes over by itself after the node timeout.
       */
      async failover() {
        const queueOwner = await cluster.ownerOf('{bull}');
        const isOwner = (n: LocalRedis) => `${n.host}:${n.port}` === queueOwner;
        const pair = pairs.find((p) => p.some(isOwner));
        if (!pair) throw new Error(`no node of this cluster owns {bull} (${queueOwner})`);
        const [master, replica] = isOwner(pair[0]) ? pair : [pair[1], pair[0]];
        await replica.pause();
        await withNode(master, (admin) => admin.call('CLIENT', 'KILL', 'TYPE', 'replica'));
        await pause(LAG_MS);
        await master.kill();
        await replica.resume();
        await waitFor(`port ${replica.port} to take over`, async () => (await role(replica)) === 'master');
        await master.restart(); // rejoins with its nodes.conf, learns it lost its slots, and follows the new master
        await waitCaughtUp(replica, master);
      },
    };
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('durability off: runs, and reports what the failovers cost', async () => {
    expect((await soak(backend, 'off', undefined)).failovers).toBe(FAILOVERS);
  });

  it('durability on: no duplicate effect when masters fail over, and every call completed or reported ambiguous', async () => {
    expectClean(await soak(backend, 'on', { replicas: 1, timeoutMs: 500 }));
  });
});

function expectClean(on: Figures): void {
  expect(on.failovers).toBe(FAILOVERS);
  expect(on.otherFailures).toEqual([]);
  expect(on.completed + on.ambiguous).toBe(JOBS);
  expect(on.duplicates).toBe(0);
}

async function soak(backend: Backend, mode: string, durability: DurabilityOptions | undefined): Promise<Figures> {
  const queueName = `soak-${mode}`;
  const queue = new Queue(queueName, { connection: backend.connect({ maxRetriesPerRequest: null }), prefix: backend.bullPrefix });
  queue.on('error', () => undefined);
  const outbox = new Outbox();
  const tools = [sendEmailTool(outbox, undefined, 10), createTicketTool(outbox, 10)];
  const jobs = await queue.addBulk(
    Array.from({ length: JOBS }, (_, i) => ({
      name: 'call',
      data: {
        tenantId: 'acme',
        runId: `${mode}-${i}`,
        calls: [
          i % 2 === 0
            ? { id: `c${i}`, name: 'send_email', input: { to: `${mode}-${i}` } }
            : { id: `c${i}`, name: 'create_ticket', input: { id: `${mode}-${i}` } },
        ],
      },
      opts: { attempts: 100, backoff: { type: 'fixed', delay: 200 } },
    })),
  );
  await backend.synced(); // every job is on the replicas before anything runs

  const settled = new Map<string, string>();
  const workers: FailoverWorker[] = [];
  const watchers: Promise<void>[] = [];
  let stopWatching = false;
  for (const name of ['w1', 'w2']) {
    const w = failoverWorker(backend.connect, queueName, {
      name,
      tools,
      durability,
      prefix: backend.prefix,
      bullPrefix: backend.bullPrefix,
      worker: { concurrency: 2, lockDuration: 2000, stalledInterval: 1000, maxStalledCount: 100 },
    });
    workers.push(w);
    watchers.push(
      (async () => {
        while (!stopWatching) {
          const o = await w.next(500).catch(() => undefined);
          if (o?.jobId === undefined) continue;
          if (o.kind === 'completed') settled.set(o.jobId, 'completed');
          else if (/receipt\.ambiguous/.test(o.error ?? '')) settled.set(o.jobId, 'ambiguous');
          else if (!/durability\.not_acknowledged/.test(o.error ?? '')) settled.set(o.jobId, `failed: ${o.error}`);
        }
      })(),
    );
  }

  let failovers = 0;
  const deadline = performance.now() + SETTLE_DEADLINE_MS;
  while (performance.now() < deadline) {
    const completed = [...settled.values()].filter((s) => s === 'completed').length;
    if (failovers < FAILOVERS && completed >= ((failovers + 1) * JOBS) / (FAILOVERS + 1)) {
      await backend.failover();
      failovers += 1;
    }
    // Settled means settled on the current master: a completion a failover lost runs (and replays) again.
    const counts = await queue.getJobCounts('completed', 'failed');
    if (failovers === FAILOVERS && (counts.completed ?? 0) + (counts.failed ?? 0) >= JOBS) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  stopWatching = true;
  await Promise.all(watchers);
  await Promise.all(workers.map((w) => w.close()));

  const states = await Promise.all(jobs.map(async (job) => ({ job, state: await queue.getJobState(job.id!) })));
  const failed = await Promise.all(
    states.filter((s) => s.state === 'failed').map(async (s) => (await queue.getJob(s.job.id!))?.failedReason ?? ''),
  );
  await queue.close();
  const result: Figures = {
    backend: backend.name,
    mode,
    failovers,
    calls: JOBS,
    completed: states.filter((s) => s.state === 'completed').length,
    ambiguous: failed.filter((r) => r.includes('receipt.ambiguous')).length,
    otherFailures: [
      ...failed.filter((r) => !r.includes('receipt.ambiguous')),
      ...states.filter((s) => s.state !== 'completed' && s.state !== 'failed').map((s) => `job ${s.job.id} still ${s.state}`),
    ],
    duplicates: outbox.duplicates.length,
    redone: outbox.redone,
  };
  figures.push(result);
  return result;
}
