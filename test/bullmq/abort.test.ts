import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { NeverStartedError, OutcomeUnknownError } from '../../src/core/index.js';
import { defineTool } from '../../src/bullmq/index.js';
import { call, jobData, RETRYING, useLanes } from './fixture.js';

const lane = useLanes();

/** A tool that waits until its signal aborts, then throws what `onAbort` makes. */
function abortableTool(effect: 'opaque' | 'resumable', onAbort: (reason: unknown) => Error) {
  let started = () => {};
  let runs = 0;
  const running = new Promise<void>((r) => (started = r));
  const tool = defineTool({
    name: 'long_call',
    input: z.object({ n: z.number() }),
    effect,
    destructive: false,
    execute: (_args, ctx) =>
      new Promise((_, reject) => {
        runs++;
        started();
        ctx.signal.addEventListener('abort', () => reject(onAbort(ctx.signal.reason)), { once: true });
      }),
  });
  return { tool, running, runs: () => runs };
}

describe('aborted attempts', () => {
  it('a lost BullMQ lock aborts the call and leaves an opaque receipt to become ambiguous', async () => {
    const l = await lane();
    const t = abortableTool('opaque', (reason) => new Error(`aborted: ${String(reason)}`));
    const { processor, worker } = l.worker({ tools: [t.tool], leaseMs: 300 });
    const data = jobData([call('long_call', { n: 1 })]);
    const job = await l.add(data, { attempts: 1 });
    await t.running;
    // What BullMQ's lock manager emits when it cannot extend a job's lock.
    worker.emit('lockRenewalFailed', [job.id!]);
    const failed = await l.settle(job);
    // The job ends with the lost lock, not with a failure of the tool it cut off.
    expect(failed.failedReason).toMatch(/lock of job .* could not be renewed/);
    const [receipt] = await processor.store.listRun(data.tenantId, data.runId);
    expect(receipt!.status).toBe('running'); // not settled as failed: nothing proves it did not land
    await expect.poll(async () => (await processor.store.inspect(receipt!.key))!.leaseExpired, { timeout: 10_000 }).toBe(true);
    const retry = await l.run(data, { attempts: 1 });
    expect(retry.failedReason).toMatch(/^receipt\.ambiguous: /);
  });

  it('a cancelled job whose tool proves nothing ran settles the call as failed and ends with job.cancelled', async () => {
    const l = await lane();
    const t = abortableTool('opaque', () => new NeverStartedError('cancelled before sending'));
    const { processor, worker } = l.worker({ tools: [t.tool], leaseMs: 300 });
    const data = jobData([call('long_call', { n: 2 })]);
    const job = await l.add(data, RETRYING);
    await t.running;
    worker.cancelJob(job.id!, 'operator cancelled');
    const done = await l.settle(job);
    expect(done.failedReason).toMatch(/^job\.cancelled: /);
    expect(done.attemptsMade).toBe(1);
    const [receipt] = await processor.store.listRun(data.tenantId, data.runId);
    // Settled as the tool reported: nothing ran, so a later job may run the call again.
    expect(receipt).toMatchObject({ status: 'failed', tier: 'neverStarted' });
    // The tool was stopped, it did not fail: the breaker counted nothing.
    expect(await l.redis.hgetall(processor.breaker.redisKey(data.tenantId, data.runId))).toEqual({});
    expect(t.runs()).toBe(1);
  });

  it('a cancelled job whose tool reports an unknown outcome leaves the call ambiguous at once and ends with job.cancelled', async () => {
    const l = await lane();
    const t = abortableTool('opaque', () => new OutcomeUnknownError('the request was sent when the job was cancelled'));
    const { processor, worker } = l.worker({ tools: [t.tool] }); // a 30 s lease: only the tool's report can make it ambiguous now
    const data = jobData([call('long_call', { n: 3 })]);
    const job = await l.add(data, RETRYING);
    await t.running;
    worker.cancelJob(job.id!, 'operator cancelled');
    const done = await l.settle(job);
    expect(done.failedReason).toMatch(/^job\.cancelled: /);
    expect(done.attemptsMade).toBe(1);
    const ambiguous = await processor.store.listAmbiguous();
    expect(ambiguous.map((r) => r.key.runId)).toEqual([data.runId]);
    expect(ambiguous[0]).toMatchObject({ status: 'running', leaseExpired: true });
  });
});
