/**
 * Failover soak on Sentinel: two workers run jobs of opaque and resumable
 * calls while the harness forces a failover at a third and two thirds of the
 * way through: the replica falls behind for a moment, the master is
 * SIGKILLed, the replica is promoted and the old master rejoins as replica. Effects
 * land in an outbox in this process, so they survive every failover and can
 * be counted. Durability off, then on, on the same servers; the figures are
 * printed (see `Outbox` for what counts as a duplicate). With durability on
 * there must be no duplicate effect, and every
 * call completed or was reported ambiguous. With it off the test only
 * reports what happened: how many duplicates a run gives depends on timing.
 */
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DurabilityOptions } from '../../src/index.js';
import { sentinelSkipReason, startSentinelSet, type SentinelSetHandle } from '../support/redis-sentinel.js';
import { Outbox, createTicketTool, failoverWorker, sendEmailTool, type FailoverWorker } from './support.js';

const skip = sentinelSkipReason();
const JOBS = 40;
const FAILOVERS = 2;
const SETTLE_DEADLINE_MS = 60_000;
/** How long the replica falls behind before each failover. */
const LAG_MS = 400;

interface Figures {
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

describe.skipIf(skip !== undefined)('failover soak', () => {
  let set: SentinelSetHandle;
  const figures: Figures[] = [];
  beforeAll(async () => {
    set = await startSentinelSet();
  });
  afterAll(async () => {
    for (const f of figures) {
      console.log(
        `[failover soak] durability ${f.mode}: ${f.failovers} failovers, ${f.calls} calls, ${f.completed} completed, ` +
          `${f.ambiguous} ambiguous, ${f.otherFailures.length} failed otherwise, ${f.duplicates} duplicate effects ` +
          `(and ${f.redone} resumable steps redone after being cut off before their record landed)`,
      );
    }
    await set?.stop();
  });

  /**
   * The replica lags (SIGSTOPped and cut off for a moment, as a slow network
   * would leave it), the master dies, the replica is promoted, and the old
   * master rejoins as its replica.
   */
  async function failover(): Promise<void> {
    const master = await set.master();
    const replica = set.replicaOf(master);
    await set.cutOff(replica);
    await new Promise((r) => setTimeout(r, LAG_MS));
    await master.kill();
    await replica.resume();
    await set.waitForMaster(replica);
    await set.rejoin(master);
  }

  async function soak(mode: string, durability: DurabilityOptions | undefined): Promise<Figures> {
    const queueName = `soak-${mode}`;
    const queue = new Queue(queueName, { connection: set.connect({ maxRetriesPerRequest: null }), prefix: set.prefix });
    queue.on('error', () => undefined);
    const outbox = new Outbox();
    const tools = [sendEmailTool(outbox, undefined, 10), createTicketTool(outbox, 10)];
    const jobs = await queue.addBulk(
      Array.from({ length: JOBS }, (_, i) => ({
        name: 'call',
        data: {
          tenantId: 'acme',
          runId: `${mode}-${i}`,
          calls: [i % 2 === 0 ? { id: `c${i}`, name: 'send_email', input: { to: `${mode}-${i}` } } : { id: `c${i}`, name: 'create_ticket', input: { id: `${mode}-${i}` } }],
        },
        opts: { attempts: 100, backoff: { type: 'fixed', delay: 200 } },
      })),
    );
    const master = await set.master();
    await set.waitForSync(master, set.replicaOf(master)); // every job is on both servers before anything runs

    const settled = new Map<string, string>();
    const workers: FailoverWorker[] = [];
    const watchers: Promise<void>[] = [];
    let stopWatching = false;
    for (const name of ['w1', 'w2']) {
      const w = failoverWorker(set.connect, queueName, {
        name,
        tools,
        durability,
        prefix: set.prefix,
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
        await failover();
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
    const failed = await Promise.all(states.filter((s) => s.state === 'failed').map(async (s) => (await queue.getJob(s.job.id!))?.failedReason ?? ''));
    await queue.close();
    const result: Figures = {
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

  it('durability off: runs, and reports what the failovers cost', async () => {
    const off = await soak('off', undefined);
    expect(off.failovers).toBe(FAILOVERS);
  });

  it('durability on: no duplicate effect, and every call completed or reported ambiguous', async () => {
    const on = await soak('on', { replicas: 1, timeoutMs: 500 });
    expect(on.failovers).toBe(FAILOVERS);
    expect(on.otherFailures).toEqual([]);
    expect(on.completed + on.ambiguous).toBe(JOBS);
    expect(on.duplicates).toBe(0);
  });
});
