/**
 * A submit's `timeoutMs` limits the waiting only: a turn that already ended
 * gives its end whatever the limit says, the clock starts once the
 * QueueEvents is ready and the job is in, and a timeout says what became of
 * the job.
 */
import { Job, QueueEvents } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { TurnFailedError, TurnTimeoutError } from '../../src/client/index.js';
import { RETRYING, useLanes } from '../bullmq/fixture.js';
import { clientOn, fixtureTools, haltingWipe, useOwnConnections } from './support.js';

const lane = useLanes();
const open = useOwnConnections();

const lookup = (turnId: string) => ({
  tenantId: 'acme',
  runId: 'run-1',
  turnId,
  calls: [{ id: 'c1', name: 'lookup_order', input: { order_id: 'A-1' } }],
});

describe('a turn that already ended', () => {
  it('returns its results with timeoutMs: 0', async () => {
    const l = await lane();
    const { tools, runs } = fixtureTools();
    l.worker({ tools });
    const client = clientOn(l);
    const first = await client.submit(lookup('t-1'));
    expect(first).toEqual([expect.objectContaining({ outcome: 'executed' })]);

    expect(await client.submit({ ...lookup('t-1'), timeoutMs: 0 })).toEqual(first);
    // The client-wide limit too.
    expect(await clientOn(l, { timeoutMs: 0 }).submit(lookup('t-1'))).toEqual(first);
    expect(runs.lookup_order).toBe(1);
  });

  it('ends with its failure, not a timeout, with timeoutMs: 0', async () => {
    const l = await lane();
    const wipe = haltingWipe('the wipe stopped halfway');
    l.worker({ tools: [wipe] });
    const client = clientOn(l, { jobOptions: RETRYING });
    const wipeTurn = { tenantId: 'acme', runId: 'run-1', turnId: 't-1', calls: [{ id: 'c1', name: 'wipe_disk', input: {} }] };
    await expect(client.submit(wipeTurn)).rejects.toBeInstanceOf(TurnFailedError);
    const again = await client.submit({ ...wipeTurn, timeoutMs: 0 }).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(TurnFailedError);
    expect((again as TurnFailedError).failedReason).toContain('the wipe stopped halfway');
  });

  it('the limit starts once the QueueEvents is ready and the job is in: time spent connecting does not use it up', async () => {
    const l = await lane();
    const { tools } = fixtureTools();
    l.worker({ tools });
    const first = await clientOn(l).submit(lookup('t-1'));

    // Redis holds every command for 1.5 s; a QueueEvents made now is ready, and the job found, only after that.
    const started = Date.now();
    await l.redis.call('CLIENT', 'PAUSE', '1500', 'ALL');
    const events = open(l, (connection) => new QueueEvents(l.queueName, { connection, prefix: l.prefix }));
    const again = await clientOn(l, { queueEvents: events }).submit({ ...lookup('t-1'), timeoutMs: 300 });
    expect(again).toEqual(first);
    // The pause really outlasted the limit (a lower bound: load only lengthens it).
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });
});

describe('a wait that runs out says what became of the job', () => {
  it('a job no worker took yet is named as waiting and left as it is', async () => {
    const l = await lane();
    const client = clientOn(l);
    const error = await client.submit({ ...lookup('t-1'), timeoutMs: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TurnTimeoutError);
    expect(error).toMatchObject({ code: 'turn.timeout', timeoutMs: 300, jobState: 'waiting' });
    const message = (error as Error).message;
    expect(message).toContain('is still waiting');
    expect(message).not.toContain('keeps running');
    expect(message).toContain('submit the same turn again');
    expect(await l.queue.getJobState(client.jobIdOf(lookup('t-1')))).toBe('waiting');
  });

  it('a job removed while the client waited is named as gone, not as one to attach to', async () => {
    const l = await lane();
    const client = clientOn(l);
    const jobId = client.jobIdOf(lookup('t-1'));
    // The limit leaves ample time to remove the job before it runs out, even on a loaded machine.
    const waiting = client.submit({ ...lookup('t-1'), timeoutMs: 4000 }).catch((e: unknown) => e);
    await expect.poll(() => l.queue.getJobState(jobId), { timeout: 10_000 }).toBe('waiting');
    await (await Job.fromId(l.queue, jobId))!.remove();
    const error = await waiting;
    expect(error).toBeInstanceOf(TurnTimeoutError);
    expect(error).toMatchObject({ code: 'turn.timeout', jobState: 'unknown' });
    const message = (error as Error).message;
    expect(message).toContain(`job "${jobId}" no longer exists`);
    expect(message).not.toContain('attaches to');
    expect(message).not.toContain('keeps running');
  });
});
