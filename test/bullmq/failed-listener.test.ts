/**
 * What a Worker's `failed` listeners get: for every failure, retried or not,
 * an error with the package's `code` that is a `ToolReceiptsError`. One that
 * must not be retried is BullMQ's `UnrecoverableError` (so BullMQ stops),
 * standing for the package's error, which it keeps as `cause`. Real Worker,
 * real Redis.
 */
import { UnrecoverableError, type Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { NeverStartedError, OutcomeUnknownError, ToolReceiptsError } from '../../src/core/index.js';
import { AmbiguousToolCallError, InvalidJobDataError, ToolCallFailedError } from '../../src/bullmq/index.js';
import { call, flakyTool, jobData, RETRYING, useLanes } from './fixture.js';

const lane = useLanes();

/** Runs `data` on a Worker with `tools` and returns what its `failed` listener got, and the failed job. */
async function failedWith(tools: Parameters<Awaited<ReturnType<typeof lane>>['worker']>[0]['tools'], data: unknown) {
  const l = await lane();
  const { worker } = l.worker({ tools });
  const seen: unknown[] = [];
  worker.on('failed', (_job: Job | undefined, error: Error) => void seen.push(error));
  const job = await l.run(data, RETRYING);
  expect(await job.getState()).toBe('failed');
  // The listener runs once the job is failed: one per failed attempt.
  for (let waited = 0; seen.length < job.attemptsMade && waited < 5_000; waited += 20) await new Promise((r) => setTimeout(r, 20));
  expect(seen).toHaveLength(job.attemptsMade);
  return { error: seen.at(-1) as Error & { code?: unknown }, job };
}

describe("a Worker's failed listeners", () => {
  it('get the code of a failure that is not retried, on the UnrecoverableError that keeps the error as cause', async () => {
    const { error, job } = await failedWith([flakyTool('lookup', () => undefined).tool], { tenantId: 'acme', calls: 'not a list' });
    expect(job.attemptsMade).toBe(1);
    expect(error).toBeInstanceOf(UnrecoverableError);
    expect(error).toBeInstanceOf(ToolReceiptsError);
    expect(error.code).toBe('job.invalid_data');
    expect(error.name).toBe('UnrecoverableError');
    expect(error.message).toMatch(/^job\.invalid_data: /);
    expect(error.cause).toBeInstanceOf(InvalidJobDataError);
    expect(error.message).toBe(`job.invalid_data: ${(error.cause as Error).message}`);
    expect(job.failedReason).toBe(error.message);
  });

  it('get receipt.ambiguous for an ambiguous call, its results on the cause', async () => {
    const first = flakyTool('lookup_order', () => undefined);
    const pay = flakyTool('charge_card', () => new OutcomeUnknownError('gateway timed out after the request was sent'));
    const data = jobData([call('lookup_order', { n: 1 }, 'toolu_first'), call('charge_card', { n: 7 })]);
    const { error, job } = await failedWith([first.tool, pay.tool], data);
    expect(job.attemptsMade).toBe(1);
    expect(error).toBeInstanceOf(UnrecoverableError);
    expect(error).toBeInstanceOf(ToolReceiptsError);
    expect(error).not.toBeInstanceOf(AmbiguousToolCallError); // that is its cause
    expect(error.code).toBe('receipt.ambiguous');
    expect(error.cause).toBeInstanceOf(AmbiguousToolCallError);
    expect((error.cause as AmbiguousToolCallError).results).toEqual([expect.objectContaining({ tool_use_id: 'toolu_first' })]);
  });

  it('get the code of a failure that is retried, on the error itself, at each attempt that failed', async () => {
    const l = await lane();
    const limited = flakyTool('lookup', (n) => (n < 3 ? new NeverStartedError('rate limited before sending') : undefined));
    const { worker } = l.worker({ tools: [limited.tool] });
    const seen: (Error & { code?: unknown })[] = [];
    worker.on('failed', (_job: Job | undefined, error: Error) => void seen.push(error));
    const job = await l.run(jobData([call('lookup', { n: 1 })]), RETRYING);
    expect(await job.getState()).toBe('completed');
    expect(job.attemptsMade).toBe(3);
    expect(seen).toHaveLength(2);
    for (const error of seen) {
      expect(error).toBeInstanceOf(ToolCallFailedError);
      expect(error).toBeInstanceOf(ToolReceiptsError);
      expect(error).not.toBeInstanceOf(UnrecoverableError);
      expect(error.code).toBe('tool.failed');
    }
  });
});
