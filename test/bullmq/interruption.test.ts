import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type ToolJobResult } from '../../src/bullmq/index.js';
import { call, jobData, RETRYING, useLanes } from './fixture.js';

const lane = useLanes();

/**
 * A first tool that waits until its signal aborts and then finishes anyway
 * (as a tool that ignores its signal would), and a second tool that counts
 * its runs.
 */
function twoTools() {
  let started = () => {};
  const running = new Promise<void>((r) => (started = r));
  let laterRuns = 0;
  const first = defineTool({
    name: 'first_call',
    input: z.object({}),
    effect: 'opaque',
    destructive: false,
    execute: (_args, ctx) =>
      new Promise((resolve) => {
        started();
        ctx.signal.addEventListener('abort', () => resolve('finished despite the abort'), { once: true });
      }),
  });
  const later = defineTool({
    name: 'later_call',
    input: z.object({}),
    effect: 'opaque',
    destructive: false,
    execute: () => `ran ${++laterRuns}`,
  });
  return { tools: [first, later], running, laterRuns: () => laterRuns };
}

describe('a job whose lock was lost or that was cancelled', () => {
  it('claims none of its later calls after lockRenewalFailed and ends with job.lock_lost', async () => {
    const l = await lane();
    const t = twoTools();
    const { worker } = l.worker({ tools: t.tools });
    const failed = new Promise<Error>((resolve) => worker.once('failed', (_job, error) => resolve(error)));
    const data = jobData([call('first_call', {}), call('later_call', {})]);
    const job = await l.add(data, { attempts: 1 });
    await t.running;
    worker.emit('lockRenewalFailed', [job.id!]);
    const done = await l.settle(job);
    expect(done.finishedOn).toBeDefined();
    expect(((await failed) as { code?: string }).code).toBe('job.lock_lost');
    expect(t.laterRuns()).toBe(0);
    const receipts = await l.store.listRun(data.tenantId, data.runId);
    expect(receipts.map((r) => r.key.toolName)).toEqual(['first_call']);
  });

  it('claims none of its later calls after a cancellation and fails with job.cancelled, unrecoverably', async () => {
    const l = await lane();
    const t = twoTools();
    const { worker } = l.worker({ tools: t.tools });
    const data = jobData([call('first_call', {}), call('later_call', {})]);
    const job = await l.add(data, { attempts: 3 });
    await t.running;
    worker.cancelJob(job.id!, 'operator cancelled');
    const done = await l.settle(job);
    expect(done.failedReason).toMatch(/^job\.cancelled: /);
    expect(done.attemptsMade).toBe(1);
    expect(done.returnvalue as ToolJobResult | null).toBeFalsy();
    expect(t.laterRuns()).toBe(0);
    const receipts = await l.store.listRun(data.tenantId, data.runId);
    expect(receipts.map((r) => r.key.toolName)).toEqual(['first_call']);
  });

  it('a cancelled side-by-side group whose other call waits is not parked to come back: it fails with job.cancelled', async () => {
    const l = await lane();
    const t = twoTools();
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    let holding = () => {};
    const holderRunning = new Promise<void>((r) => (holding = r));
    const hold = defineTool({
      name: 'hold',
      input: z.object({ k: z.string() }),
      effect: 'opaque',
      destructive: false,
      execute: async () => {
        holding();
        await held;
        return 'held';
      },
    });
    const { worker } = l.worker({ tools: [...t.tools, hold], maxWaitMs: 500, waitJitterMs: 0 }, { concurrency: 4 });
    const ids = { runId: `run-group-cancel-${Date.now()}` };
    // Another job holds the receipt the group's second call needs: that call waits on its live lease.
    const holder = await l.add(jobData([call('hold', { k: 'x' })], ids));
    await holderRunning;
    const job = await l.add({ ...jobData([call('first_call', {}), call('hold', { k: 'x' })], ids), parallel: true }, { attempts: 3 });
    await t.running;
    worker.cancelJob(job.id!, 'the user pressed stop');
    const done = await l.settle(job);
    release();
    await l.settle(holder);
    expect(done.failedReason).toMatch(/^job\.cancelled: /);
    expect(done.attemptsMade).toBe(1);
    expect(done.returnvalue as ToolJobResult | null).toBeFalsy();
  });

  describe('when the running tool honours ctx.signal and throws on the abort', () => {
    /** A resumable tool that stops (throws) when its signal aborts, then an opaque send_email that counts its sends. */
    function signalThenEmail() {
      let started = () => {};
      const running = new Promise<void>((r) => (started = r));
      let sent = 0;
      const sync = defineTool({
        name: 'sync_records',
        input: z.object({}),
        effect: 'resumable',
        destructive: false,
        execute: (_args, ctx) =>
          new Promise((_, reject) => {
            started();
            ctx.signal.addEventListener('abort', () => reject(new Error('sync stopped: the job was aborted')), { once: true });
          }),
      });
      const email = defineTool({
        name: 'send_email',
        input: z.object({ to: z.string() }),
        effect: 'opaque',
        destructive: false,
        execute: () => `sent ${++sent}`,
      });
      return { tools: [sync, email], running, sent: () => sent };
    }

    for (const attempts of [3, 1]) {
      it(`a cancel ends the job with job.cancelled and no attempt sends the email (attempts: ${attempts})`, async () => {
        const l = await lane();
        const t = signalThenEmail();
        const { processor, worker } = l.worker({ tools: t.tools, leaseMs: 500 });
        const data = jobData([call('sync_records', {}), call('send_email', { to: 'ada@example.com' })]);
        const job = await l.add(data, attempts === 1 ? { attempts: 1 } : RETRYING);
        await t.running;
        worker.cancelJob(job.id!, 'the user pressed stop');
        const done = await l.settle(job);
        expect(done.failedReason).toMatch(/^job\.cancelled: /);
        expect(done.attemptsMade).toBe(1);
        // Well past the lease and the retry backoff: still no second attempt, and no email.
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        expect(await job.getState()).toBe('failed');
        expect((await l.queue.getJob(job.id!))!.attemptsMade).toBe(1);
        expect(t.sent()).toBe(0);
        const receipts = await processor.store.listRun(data.tenantId, data.runId);
        expect(receipts.map((r) => r.key.toolName)).toEqual(['sync_records']);
        // The tool was stopped, it did not fail: nothing counted against it.
        expect(await l.redis.hgetall(processor.breaker.redisKey(data.tenantId, data.runId))).toEqual({});
      });
    }

    it('a lost lock ends the job with job.lock_lost, not with the failure of the tool it stopped', async () => {
      const l = await lane();
      const t = signalThenEmail();
      const { worker } = l.worker({ tools: t.tools });
      const failed = new Promise<Error>((resolve) => worker.once('failed', (_job, error) => resolve(error)));
      const data = jobData([call('sync_records', {}), call('send_email', { to: 'ada@example.com' })]);
      const job = await l.add(data, { attempts: 1 });
      await t.running;
      worker.emit('lockRenewalFailed', [job.id!]);
      await l.settle(job);
      expect(((await failed) as { code?: string }).code).toBe('job.lock_lost');
      expect(t.sent()).toBe(0);
    });
  });
});
