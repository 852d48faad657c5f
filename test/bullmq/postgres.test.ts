/**
 * withToolReceipts on a Worker whose queue lives on PostgreSQL (BullMQ 6's
 * `createPostgresBackend`), with the receipts on Redis: each call runs once
 * however often it is delivered, a job waiting on a live attempt is parked
 * on the PostgreSQL backend due on the Redis server's clock, and the agent's
 * client submits and waits through the backend's QueueEvents. The
 * PostgreSQL cluster is a throwaway one the harness starts.
 *
 * The PostgreSQL backend promotes a delayed job once `process_at_ms` (the
 * parked job's due time, `timestamp + delay`) is at or before the `now` a
 * fetching worker sends, which is that worker's `Date.now()`: the same
 * clocks as on Redis, where the fetching workers promote delayed jobs too.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sha256Digest, toolCallArgsHash } from '../../src/core/index.js';
import { defineTool, type ToolJobResult } from '../../src/bullmq/index.js';
import { postgresSkipReason } from '../support/postgres.js';
import { clientOn } from '../client/support.js';
import { call, jobData, useLanes } from './fixture.js';

const skip = postgresSkipReason();
const TEN_MINUTES = 10 * 60_000;
const MAX_WAIT_MS = 1500;

describe.skipIf(skip !== undefined)('a PostgreSQL-backed queue with receipts on Redis', () => {
  const lane = useLanes({ queues: 'postgres' });

  it('runs each call once when the same turn arrives as two jobs on two workers', async () => {
    const l = await lane();
    const sent: string[] = [];
    const sendEmail = defineTool({
      name: 'send_email',
      input: z.object({ to: z.string() }),
      effect: 'opaque',
      execute: async ({ to }) => {
        sent.push(to);
        await new Promise((r) => setTimeout(r, 50));
        return `sent to ${to}`;
      },
    });
    l.worker({ tools: [sendEmail] }, { concurrency: 2 });
    l.worker({ tools: [sendEmail] }, { concurrency: 2 });
    const data = jobData([call('send_email', { to: 'a@x.test' }, 'toolu_a'), call('send_email', { to: 'b@x.test' }, 'toolu_b')]);
    const jobs = await Promise.all([l.add(data), l.add(data)]);
    const done = await Promise.all(jobs.map((job) => l.settle(job)));
    expect(sent.sort()).toEqual(['a@x.test', 'b@x.test']);
    const outcomes = done.flatMap((job) => (job.returnvalue as ToolJobResult).results.map((r) => r.outcome));
    expect(outcomes.filter((o) => o === 'executed')).toHaveLength(2);
    expect(outcomes.filter((o) => o === 'executed' || o === 'replayed')).toHaveLength(4);
  });

  // A worker ten minutes slow: one ten minutes fast would take the job straight back (it promotes delayed jobs on
  // its own clock) and hold it under a lock that, on PostgreSQL, runs out by its own clock too, ten minutes late.
  it('parks a job waiting on a live attempt on the PostgreSQL backend, due on the Redis clock even from a worker ten minutes slow', async () => {
    const l = await lane();
    const data = jobData([call('slow_sync', { label: 'pg' })]);
    const key = { tenantId: data.tenantId, runId: data.runId, toolName: 'slow_sync', argsHash: await toolCallArgsHash({ label: 'pg' }, sha256Digest) };
    const held = await l.store.claim(key, { effect: 'resumable', leaseMs: 60_000 });
    expect(held.decision).toEqual({ kind: 'execute', attempt: 1 });

    const delayed = new Promise<number>((resolve) => l.events.once('delayed', ({ delay }) => resolve(Number(delay))));
    const skewed = await l.spawn({ CLOCK_SKEW_MS: String(-TEN_MINUTES), MAX_WAIT_MS: String(MAX_WAIT_MS) });
    const job = await l.add(data, { attempts: 1 });
    const dueAt = await delayed;
    const [seconds, micros] = await l.redis.time();
    const serverNow = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    expect(dueAt).toBeGreaterThan(serverNow - 5_000);
    expect(dueAt).toBeLessThan(serverNow + MAX_WAIT_MS + 5_000);
    expect(await job.getState()).toBe('delayed');
    await skewed.signal('SIGKILL');

    await l.store.complete(key, held.fence!, { content: 'synced by the first attempt' });
    const slowSync = defineTool({
      name: 'slow_sync',
      input: z.object({ label: z.string() }),
      effect: 'resumable',
      destructive: false,
      execute: () => {
        throw new Error('must not run: the call completed elsewhere');
      },
    });
    l.worker({ tools: [slowSync] }, { lockDuration: 1000, stalledInterval: 500 });
    const done = await l.settle(job, 20_000);
    expect((done.returnvalue as ToolJobResult).results[0]).toMatchObject({ outcome: 'replayed', content: 'synced by the first attempt' });
    // Parking spent none of the job's attempts: the one allowed was the one that replayed.
    expect(done.attemptsMade).toBe(1);
  });

  it('lets the agent submit a turn and wait for its results through the backend’s QueueEvents, one job however often it is submitted', async () => {
    const l = await lane();
    let runs = 0;
    const report = defineTool({
      name: 'report',
      input: z.object({ name: z.string() }),
      effect: 'opaque',
      destructive: false,
      execute: ({ name }) => `report ${name} (run ${++runs})`,
    });
    l.worker({ tools: [report] });
    const client = clientOn(l);
    const turn = { tenantId: 'acme', runId: 'run-pg', turnId: 't-1', calls: [{ id: 'toolu_1', name: 'report', input: { name: 'q3' } }] };
    const [first, second] = await Promise.all([client.submit(turn), client.submit(turn)]);
    expect(first).toEqual(second);
    expect(first[0]).toMatchObject({ content: 'report q3 (run 1)', outcome: 'executed' });
    expect(runs).toBe(1);
    expect((await l.queue.getJobs(['completed', 'failed', 'active', 'waiting', 'delayed'])).map((j) => j.id)).toHaveLength(1);
  });
});
