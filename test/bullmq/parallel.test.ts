import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { OutcomeUnknownError, toolCallArgsHash } from '../../src/core/index.js';
import { defineTool, parsePartialResultsLog, type ToolJobResult } from '../../src/bullmq/index.js';
import { call, jobData, RETRYING, useLanes } from './fixture.js';

const lane = useLanes();
const results = (job: { returnvalue: unknown }) => (job.returnvalue as ToolJobResult).results;

/**
 * A tool that records when each run starts and ends and takes `ms`; it
 * throws what `fail` makes of its input, if anything.
 */
function timedTool(name: string, ms: number, flags: { parallel?: boolean; fail?: (n: number) => Error | undefined } = {}) {
  const spans: { n: number; start: number; end: number }[] = [];
  const tool = defineTool({
    name,
    input: z.object({ n: z.number() }),
    effect: 'opaque',
    destructive: false,
    parallel: flags.parallel,
    async execute({ n }) {
      const start = performance.now();
      await new Promise((resolve) => setTimeout(resolve, ms));
      spans.push({ n, start, end: performance.now() });
      const error = flags.fail?.(n);
      if (error) throw error;
      return `${name} ${n} done`;
    },
  });
  return { tool, spans };
}

/** True when every span started before any of them ended: they ran at the same time. */
const overlapped = (spans: { start: number; end: number }[]) =>
  Math.max(...spans.map((s) => s.start)) < Math.min(...spans.map((s) => s.end));

describe('calls side by side', () => {
  it('three calls of a parallel tool run at the same time; results in call order, one receipt each', async () => {
    const l = await lane();
    const search = timedTool('search', 200, { parallel: true });
    l.worker({ tools: [search.tool] });
    const data = jobData([call('search', { n: 1 }, 'toolu_1'), call('search', { n: 2 }, 'toolu_2'), call('search', { n: 3 }, 'toolu_3')]);
    const job = await l.run(data);
    expect(results(job).map((r) => [r.tool_use_id, r.outcome, r.content])).toEqual([
      ['toolu_1', 'executed', 'search 1 done'],
      ['toolu_2', 'executed', 'search 2 done'],
      ['toolu_3', 'executed', 'search 3 done'],
    ]);
    expect(search.spans).toHaveLength(3);
    expect(overlapped(search.spans)).toBe(true);
    const receipts = await l.store.listRun(data.tenantId, data.runId);
    expect(receipts.map((r) => r.status)).toEqual(['completed', 'completed', 'completed']);

    // A redelivery replays all three, still in call order.
    const again = await l.run(data);
    expect(results(again).map((r) => [r.tool_use_id, r.outcome])).toEqual([
      ['toolu_1', 'replayed'],
      ['toolu_2', 'replayed'],
      ['toolu_3', 'replayed'],
    ]);
  });

  it('a job with parallel: true runs any tools side by side; without it, other tools run one after another', async () => {
    const l = await lane();
    const email = timedTool('send_email', 100);
    l.worker({ tools: [email.tool] });
    const calls = () => [call('send_email', { n: 1 }), call('send_email', { n: 2 })];
    await l.run({ ...jobData(calls()), parallel: true });
    expect(overlapped(email.spans)).toBe(true);
    email.spans.length = 0;
    await l.run(jobData(calls()));
    expect(overlapped(email.spans)).toBe(false);
  });

  it('a call of a tool not declared parallel splits the turn: it starts after the group before it and ends before the next', async () => {
    const l = await lane();
    const search = timedTool('search', 100, { parallel: true });
    const email = timedTool('send_email', 50);
    l.worker({ tools: [search.tool, email.tool] });
    await l.run(jobData([call('search', { n: 1 }), call('search', { n: 2 }), call('send_email', { n: 3 }), call('search', { n: 4 })]));
    const [mail] = email.spans;
    const before = search.spans.filter((s) => s.n < 3);
    const after = search.spans.filter((s) => s.n === 4);
    expect(overlapped(before)).toBe(true);
    expect(Math.max(...before.map((s) => s.end))).toBeLessThanOrEqual(mail!.start);
    expect(mail!.end).toBeLessThanOrEqual(after[0]!.start);
  });

  it('a call that waits for a live attempt parks the job once all others ended; its return replays them', async () => {
    const l = await lane();
    const search = timedTool('search', 50, { parallel: true });
    l.worker({ tools: [search.tool], maxWaitMs: 200, waitJitterMs: 10 });
    const data = jobData([call('search', { n: 1 }, 'toolu_1'), call('search', { n: 2 }, 'toolu_2'), call('search', { n: 3 }, 'toolu_3')]);
    // Another attempt holds the second call.
    const held = { tenantId: data.tenantId, runId: data.runId, toolName: 'search', argsHash: await toolCallArgsHash({ n: 2 }) };
    const claim = await l.store.claim(held, { effect: 'opaque', leaseMs: 30_000 });
    expect(claim.decision.kind).toBe('execute');
    const fence = claim.fence!;

    const job = await l.add(data);
    await expect.poll(() => job.getState(), { timeout: 10_000 }).toBe('delayed');
    // The two free calls ran to the end and settled while the job was parked.
    expect(search.spans.map((s) => s.n).sort()).toEqual([1, 3]);
    await l.store.complete(held, fence, { content: 'held result' });

    const done = await l.settle(job);
    expect(results(done).map((r) => [r.tool_use_id, r.outcome, r.content])).toEqual([
      ['toolu_1', 'replayed', 'search 1 done'],
      ['toolu_2', 'replayed', 'held result'],
      ['toolu_3', 'replayed', 'search 3 done'],
    ]);
    expect(search.spans).toHaveLength(2); // nothing ran twice
  });

  it('an ambiguous call fails the job once the others ended, and their results are kept in call order', async () => {
    const l = await lane();
    const pay = timedTool('charge_card', 50, { parallel: true, fail: (n) => (n === 2 ? new OutcomeUnknownError('no answer') : undefined) });
    l.worker({ tools: [pay.tool] });
    const data = jobData([
      call('charge_card', { n: 1 }, 'toolu_1'),
      call('charge_card', { n: 2 }, 'toolu_2'),
      call('charge_card', { n: 3 }, 'toolu_3'),
    ]);
    const job = await l.run(data, RETRYING);
    expect(job.failedReason).toMatch(/^receipt\.ambiguous: /);
    expect(job.attemptsMade).toBe(1);
    expect(pay.spans).toHaveLength(3);

    const { logs } = await l.queue.getJobLogs(job.id!);
    const partial = logs.map(parsePartialResultsLog).filter((p) => p !== undefined);
    expect(partial).toHaveLength(1);
    expect(partial[0]!.results.map((r) => [r.tool_use_id, r.outcome])).toEqual([
      ['toolu_1', 'executed'],
      ['toolu_3', 'executed'],
    ]);
    expect(partial[0]!.ambiguous.tool_use_id).toBe('toolu_2');
    const receipts = await l.store.listRun(data.tenantId, data.runId);
    expect(receipts.filter((r) => r.status === 'completed')).toHaveLength(2);
  });
});

describe('side-by-side calls under contention', () => {
  it('64 concurrent turns over overlapping calls, on two workers: every effect runs once, every turn gets every result', async () => {
    const l = await lane();
    const runs = new Map<number, number>();
    const book = defineTool({
      name: 'book_slot',
      input: z.object({ slot: z.number() }),
      effect: 'opaque',
      destructive: false,
      parallel: true,
      async execute({ slot }) {
        runs.set(slot, (runs.get(slot) ?? 0) + 1);
        await new Promise((resolve) => setTimeout(resolve, 20));
        return `slot ${slot} booked`;
      },
    });
    const options = { tools: [book], maxWaitMs: 100, waitJitterMs: 20 };
    let waits = 0;
    for (const { processor } of [l.worker(options, { concurrency: 16 }), l.worker(options, { concurrency: 16 })]) {
      processor.events.on('decision', (event) => void (event.decision === 'wait' && waits++));
    }
    const ids = { tenantId: 'tenant-race', runId: 'run-race' };
    // Each turn books three of eight slots; neighbouring turns overlap.
    const turns = Array.from({ length: 64 }, (_, t) => [t % 8, (t + 1) % 8, (t + 3) % 8]);
    const jobs = await Promise.all(
      turns.map((slots, t) =>
        l.add({
          ...jobData(
            slots.map((slot, k) => call('book_slot', { slot }, `toolu_${t}_${k}`)),
            ids,
          ),
        }),
      ),
    );
    const done = await Promise.all(jobs.map((job) => l.settle(job, 60_000)));
    for (const [t, job] of done.entries()) {
      expect(job.failedReason).toBeUndefined();
      expect(results(job).map((r) => r.content)).toEqual(turns[t]!.map((slot) => `slot ${slot} booked`));
    }
    expect([...runs.entries()].sort((a, b) => a[0] - b[0])).toEqual(Array.from({ length: 8 }, (_, slot) => [slot, 1]));
    const receipts = await l.store.listRun(ids.tenantId, ids.runId);
    expect(receipts.map((r) => r.status)).toEqual(Array.from({ length: 8 }, () => 'completed'));
    expect(waits).toBeGreaterThan(0); // the turns did contend for the same receipts
  });
});
