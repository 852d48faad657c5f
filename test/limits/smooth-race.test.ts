/**
 * Sliding windows and token buckets through the real wrapper: four BullMQ
 * worker processes of concurrency 10 race over one tenant's limit with
 * `onLimit: 'wait'`, one of them SIGKILLed mid-race and replaced. The tool
 * records when each call first executed, from Redis `TIME` (the clock the
 * limit is judged on), and the test checks those timestamps themselves:
 *
 * - sliding, N per W: no N + 1 executions lie within any W (every interval
 *   of length W, those across what would be a fixed window's reset among
 *   them), and the race spans several such resets;
 * - bucket, N per W with burst b: b executions at once, and never more than
 *   b + (t_j - t_i) · N / W between any two executions t_i ≤ t_j.
 *
 * Every job completes and every call executes once (its effect recorded
 * once); margins are generous, and every wait is on observable state.
 */
import { randomBytes } from 'node:crypto';
import { Queue, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { ToolJobResult } from '../../src/bullmq/index.js';
import type { LimitDefinition } from '../../src/limits/index.js';
import { useRedis, waitUntil } from '../support/redis-fixture.js';
import { spawnWorkerProcess } from '../support/worker-process.js';

const fixture = useRedis();
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs `jobs` one-call jobs of one tenant under `definition` on four worker
 * processes, SIGKILLs one `killAfterMs` after the jobs are added (and starts
 * another), and returns the calls' first executions on the Redis clock,
 * sorted, once every job has completed.
 */
async function race(definition: LimitDefinition, jobs: number, killAfterMs: number): Promise<number[]> {
  const redis: Redis = fixture.connect();
  const id = randomBytes(4).toString('hex');
  const prefix = fixture.handle().prefix;
  const keys = { EFFECTS: `${prefix}:smooth:${id}:effects`, TIMES: `${prefix}:smooth:${id}:times` };
  const queue = new Queue(`smooth-${id}`, { connection: fixture.connect(), prefix: `${prefix}bull` });
  const spawn = () =>
    spawnWorkerProcess('limit-wrapper-worker', {
      REDIS_URL: fixture.handle().url,
      PREFIX: prefix,
      BULL_PREFIX: `${prefix}bull`,
      QUEUE: queue.name,
      LIMIT: JSON.stringify(definition),
      RESERVATION_MS: '1500',
      CONCURRENCY: '10',
      ...keys,
    });
  const workers = await Promise.all(Array.from({ length: 4 }, spawn));
  try {
    await queue.addBulk(
      Array.from({ length: jobs }, (_, i) => ({
        name: 'call',
        data: { tenantId: `tenant-${id}`, runId: `run-${i % 4}`, calls: [{ id: `toolu_${i}`, name: 'send_email', input: { n: i } }] },
        opts: { jobId: `j-${i}`, attempts: 5, backoff: { type: 'fixed', delay: 100 } },
      })),
    );
    await delay(killAfterMs);
    await workers[0]!.signal('SIGKILL');
    workers.push(await spawn());
    const done = await waitUntil(
      () => queue.getJobs(['completed', 'failed']),
      (found) => found.length === jobs,
      180_000,
      'every job to finish',
    );
    expect(done.filter((j: Job) => j.failedReason !== undefined).map((j) => j.failedReason)).toEqual([]);
    const outcomes = done.map((j: Job) => (j.returnvalue as ToolJobResult).results[0]!.outcome);
    expect(outcomes.filter((o) => o !== 'executed' && o !== 'replayed')).toEqual([]);
    // Every call executed, each effect once (a set, and the first time of each call).
    expect(await redis.scard(keys.EFFECTS)).toBe(jobs);
    const times = Object.values(await redis.hgetall(keys.TIMES)).map(Number);
    expect(times).toHaveLength(jobs);
    return times.sort((a, b) => a - b);
  } finally {
    await Promise.all(workers.map((w) => w.signal('SIGKILL')));
    await queue.close();
  }
}

describe('a sliding window through the wrapper, worker processes racing', () => {
  it('never lets N + 1 executions into any interval of length W, across fixed-window resets, a worker SIGKILLed', async () => {
    const N = 4;
    const W = 2000;
    const jobs = 24;
    const times = await race({ name: 'calls', per: 'tenant', max: N, windowMs: W, kind: 'sliding', onLimit: 'wait' }, jobs, 2500);
    // Any N + 1 executions in one interval of length W would have t[i + N] - t[i] < W for some i.
    const crowded = times.flatMap((t, i) => (i + N < times.length && times[i + N]! - t < W ? [times.slice(i, i + N + 1)] : []));
    expect(crowded).toEqual([]);
    // The race crosses several resets a fixed window of W would have had (at the multiples of W).
    const resets = Math.floor(times.at(-1)! / W) - Math.floor(times[0]! / W);
    expect(resets).toBeGreaterThanOrEqual(3);
    // And the window was used: the jobs did not take more than twice as long as N per W allows, plus slack.
    expect(times.at(-1)! - times[0]!).toBeLessThan(2 * (jobs / N) * W + 15_000);
  }, 240_000);
});

describe('a token bucket through the wrapper, worker processes racing', () => {
  it('runs its burst at once, then never more than one unit every W / N, a worker SIGKILLed', async () => {
    const N = 2;
    const W = 2000;
    const burst = 3;
    const jobs = 12;
    const interval = W / N;
    const times = await race(
      { name: 'calls', per: 'tenant', max: N, windowMs: W, kind: 'bucket', burst, onLimit: 'wait' },
      jobs,
      burst * interval + 500,
    );
    // The burst: the first b ran together, closer than the rate alone would allow ((b - 1) · W / N apart).
    expect(times[burst - 1]! - times[0]!).toBeLessThan((burst - 1) * interval);
    // Never more: between executions i and j (inclusive), at most b + (t_j - t_i) · N / W, in whole numbers.
    const over: [number, number][] = [];
    for (let i = 0; i < times.length; i++) {
      for (let j = i + 1; j < times.length; j++) {
        if ((j - i + 1 - burst) * W > (times[j]! - times[i]!) * N) over.push([i, j]);
      }
    }
    expect(over).toEqual([]);
    // And the bucket was used: not more than twice as long as its rate allows, plus slack.
    expect(times.at(-1)! - times[0]!).toBeLessThan(2 * (jobs - burst) * interval + 15_000);
  }, 240_000);
});
