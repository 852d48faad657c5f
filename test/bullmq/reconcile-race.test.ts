/**
 * Two real Workers reach the same expired opaque receipt at once: exactly one
 * reconciles under the reconcile lease while the other waits, and both jobs
 * end with the reconciled result. Also: what a reconcile is given, a
 * reconcile that outlives its timeout, and a tool that reports an unknown
 * outcome (`OutcomeUnknownError`) being settled in the same delivery.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { OutcomeUnknownError, toolCallArgsHash } from '../../src/core/index.js';
import {
  defineTool,
  idempotencyKeyFor,
  type DecisionEvent,
  type ReconcileAnswer,
  type ReconcileContext,
  type ToolJobResult,
} from '../../src/bullmq/index.js';
import { waitForLeaseExpiry } from '../support/redis-fixture.js';
import { call, jobData, useLanes, type Lane } from './fixture.js';

const lane = useLanes();

const input = { to: 'ops@example.com', text: 'Your order shipped.' };

/** A receipt whose opaque attempt 1 was claimed (as a worker would) and then lost its lease. */
async function expiredAttempt(l: Lane, data: { tenantId: string; runId: string }) {
  const key = { tenantId: data.tenantId, runId: data.runId, toolName: 'notify', argsHash: await toolCallArgsHash(input) };
  const claimed = await l.store.claim(key, { effect: 'opaque', leaseMs: 50, owner: 'lost-worker' });
  expect(claimed.attempt).toBe(1);
  await waitForLeaseExpiry(l.store, key);
  return { key, startedMs: (await l.store.inspect(key))!.startedMs };
}

const notifyTool = (reconcile: (ctx: ReconcileContext) => Promise<ReconcileAnswer>, options: { reconcileTimeoutMs?: number } = {}) => {
  const executions: number[] = [];
  const tool = defineTool({
    name: 'notify',
    input: z.object({ to: z.string(), text: z.string() }),
    effect: 'opaque',
    destructive: false,
    ...options,
    execute: (_args, ctx) => (executions.push(ctx.attempt), { notified: true }),
    reconcile: (_args, ctx) => reconcile(ctx),
  });
  return { tool, executions };
};

describe('two workers at the same expired receipt', () => {
  it('exactly one reconciles while the other waits; both jobs replay the reconciled result', async () => {
    const l = await lane();
    const data = jobData([call('notify', input, 'toolu_notify')]);
    const { key, startedMs } = await expiredAttempt(l, data);

    const asked: ReconcileContext[] = [];
    let answer!: (a: ReconcileAnswer) => void;
    const gate = new Promise<ReconcileAnswer>((resolve) => (answer = resolve));
    const { tool, executions } = notifyTool(async (ctx) => (asked.push(ctx), gate));
    const decisions: DecisionEvent[] = [];
    for (const owner of ['worker-a', 'worker-b']) {
      const { processor } = l.worker({ tools: [tool], owner, maxWaitMs: 150, waitJitterMs: 20, leaseMs: 2_000 });
      processor.events.on('decision', (e) => decisions.push(e));
    }
    const jobs = [await l.add(data), await l.add(data)];

    // One worker holds the reconcile lease; the other is told to wait, and keeps waiting.
    await expect.poll(() => decisions.filter((d) => d.decision === 'wait').length, { timeout: 15_000 }).toBeGreaterThanOrEqual(2);
    expect(asked).toHaveLength(1);
    const reconciling = await l.store.inspect(key);
    expect(reconciling).toMatchObject({ status: 'running', attempts: 1, reconciled: null });
    expect(reconciling!.reconcilingUntilMs).toBeGreaterThan(reconciling!.readAtMs);
    // Being reconciled, it is nobody's ticket yet.
    expect(await l.store.listAmbiguous()).toEqual([]);
    // The reconcile was told about the lost attempt, on the server clock.
    expect(asked[0]).toMatchObject({
      attempt: 1,
      attemptStartedMs: startedMs,
      idempotencyKey: idempotencyKeyFor(key),
      callId: 'toolu_notify',
    });

    answer({ status: 'completed', result: { notified: true, via: 'lookup' } });
    const done = await Promise.all(jobs.map((j) => l.settle(j)));
    for (const job of done) {
      expect((job.returnvalue as ToolJobResult).results).toMatchObject([
        { outcome: 'replayed', content: '{"notified":true,"via":"lookup"}' },
      ]);
    }
    expect(asked).toHaveLength(1);
    expect(executions).toEqual([]);
    const record = await l.store.inspect(key);
    expect(record).toMatchObject({ status: 'completed', attempts: 1, reconcilingUntilMs: null });
    expect(['worker-a', 'worker-b']).toContain(record!.reconciled!.by);
    expect(decisions.filter((d) => d.reconciled === 'completed')).toHaveLength(1);
  });

  it('a reconcile that outlives its timeout counts as unknown: ambiguous, never executed', async () => {
    const l = await lane();
    const data = jobData([call('notify', input, 'toolu_notify')]);
    const { key } = await expiredAttempt(l, data);
    let aborted = false;
    const { tool, executions } = notifyTool(
      (ctx) =>
        new Promise<ReconcileAnswer>((resolve) => {
          ctx.signal.addEventListener('abort', () => (aborted = true));
          setTimeout(() => resolve({ status: 'not_started' }), 5_000).unref();
        }),
      { reconcileTimeoutMs: 200 },
    );
    l.worker({ tools: [tool], onAmbiguous: 'report' });
    const done = await l.run(data);
    expect((done.returnvalue as ToolJobResult).results).toMatchObject([{ outcome: 'ambiguous', is_error: true }]);
    expect(aborted).toBe(true);
    expect(executions).toEqual([]);
    const record = await l.store.inspect(key);
    expect(record).toMatchObject({ status: 'running', attempts: 1, ambiguousMs: expect.any(Number) });
    expect(record!.reconciled).toMatchObject({ verdict: 'unknown', attempt: 1, note: 'reconcile timed out after 200 ms' });

    // A later delivery does not ask again: the verdict on this attempt stands until a person settles it.
    const again = await l.run(jobData(data.calls, data));
    expect((again.returnvalue as ToolJobResult).results).toMatchObject([{ outcome: 'ambiguous' }]);
    expect(executions).toEqual([]);
  });
});

describe('a tool that reports an unknown outcome', () => {
  it('with a reconcile: settled in the same delivery (here: it had landed, so it replays)', async () => {
    const l = await lane();
    const landed = new Set<string>();
    const tool = defineTool({
      name: 'notify',
      input: z.object({ to: z.string(), text: z.string() }),
      effect: 'opaque',
      destructive: false,
      execute: (_args, ctx) => {
        landed.add(ctx.idempotencyKey);
        throw new OutcomeUnknownError('provider timed out after the request was sent');
      },
      reconcile: (_args, ctx) => (landed.has(ctx.idempotencyKey) ? { status: 'completed', result: 'found it' } : { status: 'not_started' }),
    });
    l.worker({ tools: [tool] });
    const data = jobData([call('notify', input, 'toolu_notify')]);
    const done = await l.run(data);
    expect((done.returnvalue as ToolJobResult).results).toMatchObject([{ outcome: 'replayed', content: 'found it' }]);
    const [record] = await l.store.listRun(data.tenantId, data.runId);
    expect(record).toMatchObject({ status: 'completed', attempts: 1, reconciled: { verdict: 'completed', attempt: 1 } });
  });

  it('keyed: run again once with the same key; a second unknown outcome is left ambiguous, not run a third time', async () => {
    const l = await lane();
    const keys: string[] = [];
    const tool = defineTool({
      name: 'charge',
      input: z.object({ cents: z.number() }),
      effect: 'keyed',
      keyWindowMs: 3_600_000,
      destructive: false,
      execute: (_args, ctx) => {
        keys.push(`${ctx.attempt}:${ctx.idempotencyKey}`);
        throw new OutcomeUnknownError('gateway timeout');
      },
    });
    l.worker({ tools: [tool], onAmbiguous: 'report' });
    const done = await l.run(jobData([call('charge', { cents: 500 })]));
    expect((done.returnvalue as ToolJobResult).results).toMatchObject([{ outcome: 'ambiguous', is_error: true }]);
    expect(keys).toHaveLength(2);
    expect(keys.map((k) => k.split(':')[0])).toEqual(['1', '2']);
    expect(new Set(keys.map((k) => k.split(':')[1])).size).toBe(1);
  });
});
