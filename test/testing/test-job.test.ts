/**
 * The `/testing` job stand-in runs a wrapped processor without a Worker while
 * the receipts live on a real Redis: a call executes once, replays after, and
 * waits (the job is sent to the delayed set) while another attempt holds it.
 */
import { DelayedError } from 'bullmq';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, withToolReceipts, type ToolJobResult } from '../../src/bullmq/index.js';
import { toolCallArgsHash } from '../../src/core/index.js';
import { testJob } from '../../src/testing/index.js';
import { useRedis } from '../support/redis-fixture.js';

const redis = useRedis();

function counterTool() {
  const sent: string[] = [];
  const tool = defineTool({
    name: 'send_email',
    input: z.object({ to: z.email() }),
    effect: 'opaque',
    async execute(args, ctx) {
      sent.push(args.to);
      return { messageId: `m-${ctx.attempt}`, jobId: ctx.job.id };
    },
  });
  return { tool, sent };
}

describe('testJob', () => {
  it('runs a call through the processor once, then replays it from the receipt', async () => {
    const { tool, sent } = counterTool();
    const processor = withToolReceipts({
      redis: redis.connect(),
      prefix: redis.handle().prefix,
      tools: [tool],
      logger: pino({ level: 'silent' }),
    });
    const data = { tenantId: 'acme', runId: 'run-t1', calls: [{ id: 'toolu_1', name: 'send_email', input: { to: 'a@example.com' } }] };

    const first = testJob(data, { id: 'job-1' });
    const executed = (await processor(first.job, 'token')) as ToolJobResult;
    const second = testJob(data, { id: 'job-2' });
    const replayed = (await processor(second.job, 'token')) as ToolJobResult;

    expect(executed.results[0]).toMatchObject({ tool_use_id: 'toolu_1', outcome: 'executed' });
    expect(replayed.results[0]).toMatchObject({ tool_use_id: 'toolu_1', outcome: 'replayed' });
    expect(replayed.results[0]!.content).toBe(executed.results[0]!.content);
    expect(JSON.parse(executed.results[0]!.content as string)).toEqual({ messageId: 'm-1', jobId: 'job-1' });
    expect(sent).toEqual(['a@example.com']);
    const record = await processor.store.inspect({
      tenantId: 'acme',
      runId: 'run-t1',
      toolName: 'send_email',
      argsHash: await toolCallArgsHash({ to: 'a@example.com' }),
    });
    expect(record).toMatchObject({ status: 'completed', attempts: 1 });
  });

  it('records the delay when another attempt holds the call', async () => {
    const { tool, sent } = counterTool();
    const processor = withToolReceipts({
      redis: redis.connect(),
      prefix: redis.handle().prefix,
      tools: [tool],
      logger: pino({ level: 'silent' }),
      maxWaitMs: 500,
    });
    const input = { to: 'b@example.com' };
    const key = { tenantId: 'acme', runId: 'run-t2', toolName: 'send_email', argsHash: await toolCallArgsHash(input) };
    const holder = redis.store();
    const held = await holder.claim(key, { effect: 'opaque', leaseMs: 60_000, owner: 'someone-else' });
    expect(held.decision.kind).toBe('execute');

    const { job, record } = testJob({ tenantId: 'acme', runId: 'run-t2', calls: [{ id: 'toolu_2', name: 'send_email', input }] });
    const before = Date.now();
    await expect(processor(job, 'token')).rejects.toBeInstanceOf(DelayedError);

    expect(sent).toEqual([]);
    expect(record.delayedUntil).toHaveLength(1);
    expect(record.delayedUntil[0]!).toBeGreaterThanOrEqual(before);
  });

  it('keeps the progress the processor writes, as a Job does: a parked turn lists every call awaiting approval', async () => {
    const approving = defineTool({
      name: 'refund',
      input: z.object({ amount: z.number() }),
      effect: 'opaque',
      approval: () => ({ reason: 'every refund' }),
      execute: (args) => `refunded ${args.amount}`,
    });
    const processor = withToolReceipts({
      redis: redis.connect(),
      prefix: redis.handle().prefix,
      tools: [approving],
      logger: pino({ level: 'silent' }),
    });
    const calls = [
      { id: 'toolu_a', name: 'refund', input: { amount: 1 } },
      { id: 'toolu_b', name: 'refund', input: { amount: 2 } },
    ];
    const { job, record } = testJob({ tenantId: 'acme', runId: 'run-t3', calls, parallel: true });
    expect(job.progress).toBe(0);
    await expect(processor(job, 'token')).rejects.toBeInstanceOf(DelayedError);
    const listed = (job.progress as { toolReceiptsAwaitingApproval: { tool_use_id: string }[] }).toolReceiptsAwaitingApproval.map(
      (c) => c.tool_use_id,
    );
    expect(listed.sort()).toEqual(['toolu_a', 'toolu_b']);
    expect(record.progress.at(-1)).toBe(job.progress);
    // A later delivery starts from the progress the earlier one left.
    const again = testJob({ tenantId: 'acme', runId: 'run-t3', calls, parallel: true }, { progress: job.progress });
    expect(again.job.progress).toBe(job.progress);
  });
});
