/**
 * The client against a real queue and worker: one job per turn however often
 * it is submitted, waits that end without touching the job, and every other
 * end as a typed error.
 */
import { Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createToolCallClient,
  InvalidTurnIdError,
  InvalidWaitLimitError,
  TurnAbortedError,
  TurnConflictError,
  TurnFailedError,
  TurnInvalidDataError,
  TurnTimeoutError,
  type ToolCallClient,
} from '../../src/client/index.js';
import { NeverStartedError } from '../../src/core/index.js';
import { defineTool, InvalidJobDataError } from '../../src/bullmq/index.js';
import { RETRYING, useLanes, type Lane } from '../bullmq/fixture.js';
import { clientOn, haltingWipe } from './support.js';

const lane = useLanes();

/** A tool that runs until the test opens its gate, counting its runs and saying when one has started. */
function gatedTool() {
  let runs = 0;
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const tool = defineTool({
    name: 'slow_report',
    input: z.object({ name: z.string() }),
    effect: 'opaque',
    destructive: false,
    async execute({ name }) {
      runs++;
      started();
      await gate;
      return `report ${name} (run ${runs})`;
    },
  });
  return { tool, open, running, runs: () => runs };
}

/** A fresh lane with a worker running the gated tool, and a client on it. */
async function gatedLane() {
  const l = await lane();
  const slow = gatedTool();
  l.worker({ tools: [slow.tool] });
  return { l, slow, client: clientOn(l) };
}

const turn = (turnId: string, name = 'q3') => ({
  tenantId: 'acme',
  runId: 'run-1',
  turnId,
  calls: [{ id: 'toolu_1', name: 'slow_report', input: { name } }],
});

const jobsOf = async (l: Lane) => (await l.queue.getJobs(['active', 'waiting', 'delayed', 'completed', 'failed'])).map((j) => j.id);

describe('one job per turn', () => {
  it('two concurrent submits of the same turn enqueue one job and both get its results', async () => {
    const { l, slow, client } = await gatedLane();
    const first = client.submit(turn('t-1'));
    const second = client.submit(turn('t-1'));
    await slow.running;
    slow.open();
    const [a, b] = await Promise.all([first, second]);
    expect(a).toEqual([{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'report q3 (run 1)', outcome: 'executed' }]);
    expect(b).toEqual(a);
    expect(slow.runs()).toBe(1);
    expect(await jobsOf(l)).toEqual([client.jobIdOf(turn('t-1'))]);
    // A submit after it finished attaches too, and gets the same results without a run.
    expect(await client.submit(turn('t-1'))).toEqual(a);
    expect(slow.runs()).toBe(1);
    expect(await jobsOf(l)).toHaveLength(1);
  });

  it('a turn whose job was removed on completion is enqueued anew, and its receipts replay the calls', async () => {
    const l = await lane();
    const slow = gatedTool();
    slow.open();
    l.worker({ tools: [slow.tool] });
    const client = clientOn(l, { jobOptions: { removeOnComplete: true } });
    expect((await client.submit(turn('t-1')))[0]).toMatchObject({ content: 'report q3 (run 1)', outcome: 'executed' });
    await expect.poll(() => jobsOf(l)).toEqual([]);
    expect((await client.submit(turn('t-1')))[0]).toMatchObject({ content: 'report q3 (run 1)', outcome: 'replayed' });
    expect(slow.runs()).toBe(1);
  });

  it('refuses the same turn with other calls, leaving the first job alone', async () => {
    const { l, slow, client } = await gatedLane();
    const first = client.submit(turn('t-1', 'q3'));
    await slow.running;
    const conflict = await client.submit(turn('t-1', 'q4')).catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(TurnConflictError);
    expect(conflict).toMatchObject({ code: 'turn.conflict', jobId: client.jobIdOf(turn('t-1')), turnId: 't-1' });
    slow.open();
    expect((await first)[0]!.content).toBe('report q3 (run 1)');
    expect(slow.runs()).toBe(1);
  });

  it('names that BullMQ would refuse as a job id (colons, digits only) still make distinct jobs', async () => {
    const l = await lane();
    let runs = 0;
    const echo = defineTool({
      name: 'echo',
      input: z.object({ n: z.number() }),
      effect: 'opaque',
      readOnly: true,
      execute: ({ n }) => `${n}:${++runs}`,
    });
    l.worker({ tools: [echo] });
    const client = clientOn(l);
    const triples = [
      ['a:b', 'c', 'd'],
      ['a', 'b:c', 'd'],
      ['1', '2', '3'],
      ['a|b', 'c', 'd'],
      ['a', 'b|c', 'd'],
      ['a%7Cb', 'c', 'd'],
      ['tenant {x}', 'run\n1', '🙂'],
    ];
    const results = await Promise.all(
      triples.map(([tenantId, runId, turnId], n) =>
        client.submit({ tenantId: tenantId!, runId: runId!, turnId: turnId!, calls: [{ id: `c${n}`, name: 'echo', input: { n } }] }),
      ),
    );
    expect(results.map((r) => r[0]!.content.split(':')[0])).toEqual(triples.map((_, n) => String(n)));
    expect(new Set(await jobsOf(l)).size).toBe(triples.length);
  });
});

describe('waits that end before the job', () => {
  const expectStillRunning = async (l: Lane, client: ToolCallClient, turnId: string) =>
    expect(await l.queue.getJobState(client.jobIdOf(turn(turnId)))).toBe('active');

  it('a timeout is typed, leaves the job running, and a later submit of the turn picks it up', async () => {
    const { l, slow, client } = await gatedLane();
    const error = await client.submit({ ...turn('t-1'), timeoutMs: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TurnTimeoutError);
    expect(error).toMatchObject({ code: 'turn.timeout', timeoutMs: 300, jobId: client.jobIdOf(turn('t-1')) });
    expect((error as Error).message).toContain('submit the same turn again');
    await expectStillRunning(l, client, 't-1');

    const resumed = client.submit(turn('t-1'));
    slow.open();
    expect((await resumed)[0]!.content).toBe('report q3 (run 1)');
    expect(slow.runs()).toBe(1);
    expect(await jobsOf(l)).toHaveLength(1);
  });

  it('an abort is typed, leaves the job running, and a later submit of the turn picks it up', async () => {
    const { l, slow, client } = await gatedLane();
    const controller = new AbortController();
    const waiting = client.submit({ ...turn('t-1'), signal: controller.signal }).catch((e: unknown) => e);
    await slow.running;
    controller.abort(new Error('user pressed stop'));
    const error = await waiting;
    expect(error).toBeInstanceOf(TurnAbortedError);
    expect(error).toMatchObject({ code: 'turn.aborted', enqueued: true, cause: controller.signal.reason });
    await expectStillRunning(l, client, 't-1');

    slow.open();
    expect((await client.submit(turn('t-1')))[0]!.content).toBe('report q3 (run 1)');
    expect(slow.runs()).toBe(1);
  });

  it('a signal that fired before the submit enqueues nothing', async () => {
    const l = await lane();
    const client = clientOn(l);
    const error = await client.submit({ ...turn('t-1'), signal: AbortSignal.abort() }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'turn.aborted', enqueued: false });
    expect(await jobsOf(l)).toEqual([]);
  });
});

describe('other ends', () => {
  it('bad input is refused before anything is enqueued', async () => {
    const l = await lane();
    const client = clientOn(l);
    await expect(client.submit({ ...turn('t-1'), calls: [] })).rejects.toBeInstanceOf(InvalidJobDataError);
    await expect(client.submit({ ...turn('t-1'), calls: [{ id: '', name: 'x', input: {} }] })).rejects.toMatchObject({
      code: 'job.invalid_data',
    });
    await expect(client.submit({ ...turn(''), calls: turn('x').calls })).rejects.toBeInstanceOf(InvalidTurnIdError);
    await expect(client.submit({ ...turn('t'), runId: '' })).rejects.toMatchObject({ code: 'turn.invalid_id', field: 'runId' });
    expect(await jobsOf(l)).toEqual([]);
  });

  it('a wait limit a timer cannot honour is refused before anything is enqueued, not turned into an instant timeout', async () => {
    const l = await lane();
    const client = clientOn(l);
    // Node fires a timer longer than 2^31-1 ms at once: 30 days must not read as "timed out".
    for (const timeoutMs of [30 * 24 * 3600 * 1000, -1, Number.NaN, Infinity, 1.5]) {
      await expect(client.submit({ ...turn('t-1'), timeoutMs })).rejects.toBeInstanceOf(InvalidWaitLimitError);
    }
    expect(await jobsOf(l)).toEqual([]);
    expect(() => createToolCallClient({ queue: l.queue, queueEvents: l.events, timeoutMs: -5 })).toThrow(
      expect.objectContaining({ code: 'options.invalid', option: 'timeoutMs' }),
    );
  });

  it('data the worker refuses (a worker stricter than the client) is typed as invalid data', async () => {
    const l = await lane();
    const client = clientOn(l);
    const waiting = client.submit(turn('t-1')).catch((e: unknown) => e);
    const jobId = client.jobIdOf(turn('t-1'));
    await expect.poll(() => l.queue.getJobState(jobId)).toBe('waiting');
    // Stands in for a worker whose schema differs: the job's data changes under it before any worker runs.
    await (await Job.fromId(l.queue, jobId))!.updateData({ tenantId: 'acme', runId: 'run-1', calls: [] });
    l.worker({ tools: [gatedTool().tool] });
    const error = await waiting;
    expect(error).toBeInstanceOf(TurnInvalidDataError);
    expect(error).toMatchObject({ code: 'turn.invalid_data', jobId, failedReason: expect.stringMatching(/^job\.invalid_data: /) });
  });

  it("a delivery that fails and is retried is not an end: the caller gets the retry's results", async () => {
    const l = await lane();
    let runs = 0;
    const flaky = defineTool({
      name: 'flaky_lookup',
      input: z.object({}),
      effect: 'opaque',
      destructive: false,
      execute: () => {
        if (++runs === 1) throw new NeverStartedError('the provider refused the connection');
        return `answered on run ${runs}`;
      },
    });
    l.worker({ tools: [flaky] });
    const results = await clientOn(l, { jobOptions: RETRYING }).submit({
      tenantId: 'acme',
      runId: 'r',
      turnId: 't',
      calls: [{ id: 'c1', name: 'flaky_lookup', input: {} }],
    });
    expect(results[0]).toMatchObject({ content: 'answered on run 2', outcome: 'executed' });
  });

  it('a job that fails for good is typed with its failedReason', async () => {
    const l = await lane();
    const wipe = haltingWipe('the wipe started and stopped halfway');
    l.worker({ tools: [wipe] });
    const client = clientOn(l, { jobOptions: RETRYING });
    const error = await client
      .submit({ tenantId: 'acme', runId: 'r', turnId: 't', calls: [{ id: 'c1', name: 'wipe_disk', input: {} }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TurnFailedError);
    expect((error as TurnFailedError).failedReason).toContain('the wipe started and stopped halfway');
    expect((await l.queue.getJob((error as TurnFailedError).jobId))?.attemptsMade).toBe(1);
  });
});

describe('calls side by side', () => {
  it('a turn submitted with parallel: true runs its calls at the same time; results in call order', async () => {
    const { slow, client } = await gatedLane();
    const calls = ['a', 'b'].map((name, i) => ({ id: `toolu_${i + 1}`, name: 'slow_report', input: { name } }));
    const pending = client.submit({ tenantId: 'acme', runId: 'run-1', turnId: 't-side', parallel: true, calls });
    // Both started while the gate is still shut: neither waited for the other.
    await expect.poll(() => slow.runs(), { timeout: 10_000 }).toBe(2);
    slow.open();
    expect((await pending).map((r) => [r.tool_use_id, r.outcome])).toEqual([
      ['toolu_1', 'executed'],
      ['toolu_2', 'executed'],
    ]);
  });
});
