/**
 * The reconcile sweep: an ambiguous call whose job failed because its
 * provider could not answer is asked again once the provider is back, and
 * its job is retried to finish the turn. Real Queues, Workers, a real BullMQ
 * job scheduler, and a real Redis.
 */
import { Queue, Worker } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { toolCallArgsHash } from '../../src/core/index.js';
import {
  defineTool,
  idempotencyKeyFor,
  reconcileAmbiguous,
  reconcileSweepProcessor,
  retryFailedJobs,
  type SweptReceipt,
  type ToolJobResult,
} from '../../src/bullmq/index.js';
import { waitForLeaseExpiry } from '../support/redis-fixture.js';
import { call, jobData, RETRYING, silent, useLanes, type Lane } from './fixture.js';

const lane = useLanes();
const input = { to: 'ops@example.com', text: 'Your order shipped.' };

/** A notify tool whose provider can be down (its lookup throws) and remembers what was sent, by key. */
function flakyProvider() {
  const provider = { up: false, sent: new Set<string>(), executions: [] as number[] };
  const tool = defineTool({
    name: 'notify',
    input: z.object({ to: z.string(), text: z.string() }),
    effect: 'opaque',
    destructive: false,
    execute: (_args, ctx) => (provider.executions.push(ctx.attempt), provider.sent.add(ctx.idempotencyKey), { notified: ctx.attempt }),
    reconcile(_args, ctx) {
      if (!provider.up) throw new Error('provider unavailable');
      return provider.sent.has(ctx.idempotencyKey) ? { status: 'completed', result: { notified: 'earlier' } } : { status: 'not_started' };
    },
  });
  return { provider, tool };
}

/**
 * A two-call job whose first call's attempt 1 was claimed in this job and lost
 * its lease; a worker then meets it while the provider is down, so the job
 * fails as ambiguous.
 */
async function failedAmbiguous(l: Lane, tool: ReturnType<typeof flakyProvider>['tool'], landed: boolean, sent: Set<string>) {
  const data = jobData([call('notify', input, 'toolu_notify'), call('notify', { ...input, text: 'Second.' }, 'toolu_second')]);
  const job = await l.add(data, RETRYING);
  const key = { tenantId: data.tenantId, runId: data.runId, toolName: 'notify', argsHash: await toolCallArgsHash(input) };
  await l.store.claim(key, { effect: 'opaque', leaseMs: 50, job: { queue: l.queueName, prefix: l.prefix, id: job.id! } });
  if (landed) sent.add(idempotencyKeyFor(key));
  await waitForLeaseExpiry(l.store, key);
  l.worker({ tools: [tool] });
  const failed = await l.settle(job);
  expect(failed.failedReason).toMatch(/^receipt\.ambiguous/);
  expect((await l.store.inspect(key))!.reconciled).toMatchObject({ verdict: 'unknown', note: 'reconcile threw: provider unavailable' });
  return { job, key };
}

describe('reconcile sweep', () => {
  it('run by a BullMQ job scheduler: the provider is back and says sent, so the call completes and the failed job finishes its turn', async () => {
    const l = await lane();
    const { provider, tool } = flakyProvider();
    const { job, key } = await failedAmbiguous(l, tool, true, provider.sent);
    provider.up = true;

    const sweeps = new Queue('sweeps', { connection: l.redis, prefix: l.prefix });
    const reports: SweptReceipt[][] = [];
    const sweeperConnection = l.redis.duplicate({ maxRetriesPerRequest: null });
    const sweeper = new Worker('sweeps', reconcileSweepProcessor({ redis: l.redis, prefix: l.prefix, tools: [tool], logger: silent }), {
      connection: sweeperConnection,
      prefix: l.prefix,
    });
    sweeper.on('completed', (j) => reports.push(j.returnvalue as SweptReceipt[]));
    try {
      await sweeps.upsertJobScheduler('tool-receipts-reconcile', { every: 300 });
      await expect.poll(() => job.getState(), { timeout: 20_000, interval: 100 }).toBe('completed');
      const done = await l.settle(job);
      expect((done.returnvalue as ToolJobResult).results.map((r) => [r.tool_use_id, r.outcome, r.content])).toEqual([
        ['toolu_notify', 'replayed', '{"notified":"earlier"}'],
        ['toolu_second', 'executed', '{"notified":1}'],
      ]);
      // The first call never ran again; only the second one ran, once.
      expect(provider.executions).toEqual([1]);
      expect(reports.flat()).toContainEqual({
        redisKey: l.store.redisKey(key),
        outcome: 'completed',
        jobs: [{ job: { queue: l.queueName, prefix: l.prefix, id: job.id }, action: 'retried' }],
      });
      expect((await l.store.inspect(key))!.reconciled).toMatchObject({ verdict: 'completed', by: `reconcile-sweep:${process.pid}` });
      expect(await l.store.listAmbiguous()).toEqual([]);
    } finally {
      await sweeps.removeJobScheduler('tool-receipts-reconcile');
      await sweeper.close();
      await sweeps.close();
      sweeperConnection.disconnect();
    }
  });

  it('not sent: the receipt is failed as never started, and the retried job runs the call as attempt 2', async () => {
    const l = await lane();
    const { provider, tool } = flakyProvider();
    const { job, key } = await failedAmbiguous(l, tool, false, provider.sent);

    // While the provider is still down, nothing is settled and nothing retried.
    expect(await reconcileAmbiguous({ redis: l.redis, prefix: l.prefix, tools: [tool], logger: silent })).toEqual([
      { redisKey: l.store.redisKey(key), outcome: 'unknown' },
    ]);
    expect(await job.getState()).toBe('failed');
    // Retrying the job now would only meet the same ambiguity: refused.
    await expect(retryFailedJobs(l.redis, (await l.store.inspect(key))!)).rejects.toMatchObject({ code: 'receipt.not_settled' });
    expect(await job.getState()).toBe('failed');

    provider.up = true;
    const [swept] = await reconcileAmbiguous({ redis: l.redis, prefix: l.prefix, tools: [tool], logger: silent });
    expect(swept).toMatchObject({ outcome: 'not_started', jobs: [{ action: 'retried' }] });
    const done = await l.settle(job);
    expect((done.returnvalue as ToolJobResult).results.map((r) => r.outcome)).toEqual(['executed', 'executed']);
    expect(provider.executions).toEqual([2, 1]);
    expect(await l.store.inspect(key)).toMatchObject({ status: 'completed', attempts: 2 });

    // Nothing is left to sweep, and a tool without a reconcile is never asked.
    expect(await reconcileAmbiguous({ redis: l.redis, prefix: l.prefix, tools: [tool], logger: silent })).toEqual([]);
  });
});
