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
import { defineTool, type ToolJobResult } from '../../src/bullmq/index.js';
import { postgresSkipReason } from '../support/postgres.js';
import { clientOn } from '../client/support.js';
import { call, jobData, useLanes } from './fixture.js';
import { parkOnServerClock, TEN_MINUTES } from './server-clock-park.js';

const skip = postgresSkipReason();

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
    const done = await parkOnServerClock(await lane(), -TEN_MINUTES, 'pg', async (job) => expect(await job.getState()).toBe('delayed'));
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
