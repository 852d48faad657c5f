/**
 * The five crash points of a transactional tool, through the wrapper, with
 * real worker processes (test/fixtures/transactional-worker.ts) on real
 * Redis, BullMQ and PostgreSQL: SIGKILLed before the tool's first write,
 * after its write before COMMIT, after COMMIT before the Redis complete; a
 * zombie stopped before BEGIN that comes back after the takeover committed;
 * a zombie stopped with its transaction open while the takeover starts
 * (it commits while the takeover waits, or the server ends it). Each call
 * ends with exactly one row, settled from PostgreSQL, never ambiguous.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ToolJobResult } from '../../src/bullmq/index.js';
import { runCli } from '../../src/cli/cli.js';
import { Capture } from '../cli/support.js';
import { expectCompleted, reached, STEP_TIMEOUT_MS } from '../bullmq/crash-support.js';
import { call, CRASH_WORKER_TIMING, jobData, RETRYING, useLanes, type Lane } from '../bullmq/fixture.js';
import { spawnWorkerProcess, type WorkerProcess } from '../support/worker-process.js';
import { listAmbiguousEntries } from '../../src/redis/runs/ambiguous-index.js';
import { RunRegistry } from '../../src/redis/runs/registry.js';
import { outcomeRows, ticketsOf, someoneWaitsOnALock, until, usePostgres } from './fixture.js';

const lane = useLanes({ queues: 'redis' });
const postgres = usePostgres();
const spawned: WorkerProcess[] = [];
afterEach(async () => {
  for (const w of spawned.splice(0)) {
    await w.signal('SIGCONT');
    await w.signal('SIGKILL');
  }
});

const spawn = async (l: Lane, env: Record<string, string> = {}) => {
  const worker = await spawnWorkerProcess('transactional-worker', {
    REDIS_URL: l.redisUrl,
    PREFIX: l.prefix,
    QUEUE: l.queueName,
    DATA_URL: postgres.handle().url,
    ...CRASH_WORKER_TIMING,
    CRASH_AT: 'none',
    ...env,
  });
  spawned.push(worker);
  return worker;
};

let serial = 0;
/** A lane, a first worker stopped at `crashAt` in a job of one record_call, and that job. */
async function crashedAt(crashAt: string, env: Record<string, string> = {}) {
  const l = await lane();
  const label = `call-${process.pid}-${++serial}`;
  const first = await spawn(l, { ...env, CRASH_AT: crashAt });
  const data = jobData([call('record_call', { label }, `toolu_${serial}`)]);
  const job = await l.add(data, RETRYING);
  await first.waitFor(reached(crashAt), STEP_TIMEOUT_MS);
  return { l, label, first, data, job };
}

const resultOf = async (l: Lane, job: Parameters<typeof expectCompleted>[1]) => {
  const done = await expectCompleted(l, job);
  const [result] = (done.returnvalue as ToolJobResult).results;
  return { outcome: result!.outcome, value: JSON.parse(result!.content) as { label: string; writtenBy: number } };
};

/**
 * The receipt is completed after `attempts`, transactional, listed for
 * nobody, its history says PostgreSQL settled it, and its lifetime has one
 * outcome row, written by attempt `committedBy`.
 */
async function expectSettledFromPostgres(l: Lane, data: ReturnType<typeof jobData>, attempts: number, committedBy: number) {
  const record = await l.receipt(data.tenantId, data.runId);
  expect(record).toMatchObject({ status: 'completed', attempts, effect: 'transactional' });
  expect((await outcomeRows(postgres.admin(), record.redisKey)).map((r) => [r.epoch, r.attempt])).toEqual([[record.epoch, committedBy]]);
  // A zombie that settles after the verdict leaves a refused late.* entry, which changed nothing.
  const verdicts = record.history.filter((e) => !e.refused);
  expect(verdicts.map((e) => e.note)).toEqual([expect.stringMatching(/^settled from PostgreSQL: /)]);
  expect(record.history.filter((e) => e.refused).map((e) => e.what)).toEqual(
    record.history.filter((e) => e.refused).map(() => expect.stringMatching(/^late\./)),
  );
  expect(await l.store.listAmbiguous()).toEqual([]);
  const out = new Capture();
  const err = new Capture();
  expect(await runCli(['ambiguous', '--prefix', l.prefix], { stdout: out, stderr: err, env: { REDIS_URL: l.url } })).toBe(0);
  expect(out.text).not.toContain(record.redisKey);
  const shown = new Capture();
  expect(await runCli(['show', record.redisKey, '--prefix', l.prefix], { stdout: shown, stderr: err, env: { REDIS_URL: l.url } })).toBe(0);
  expect(shown.text).toContain('settled from PostgreSQL');
  return record;
}

describe('a transactional call whose worker is SIGKILLed', () => {
  it.each([
    ['before-write', 'before the tool wrote anything'],
    ['after-write', 'after its write, before COMMIT'],
  ])('at %s (%s): nothing committed, so the takeover runs it as attempt 2; one row', async (crashAt) => {
    const { l, label, first, data, job } = await crashedAt(crashAt);
    await first.signal('SIGKILL');
    // Lapsed and not yet claimed again: still nothing for a person, in any listing.
    await until(async () => (await l.receipt(data.tenantId, data.runId)).leaseExpired, 'the lease to lapse', STEP_TIMEOUT_MS);
    expect(await l.store.listAmbiguous()).toEqual([]);
    expect((await listAmbiguousEntries(l.redis, new RunRegistry(l.redis, l.prefix))).entries).toEqual([]);
    await spawn(l);
    const { outcome, value } = await resultOf(l, job);
    expect(outcome).toBe('executed');
    expect(value).toEqual({ label, writtenBy: 2 });
    expect(await ticketsOf(postgres.admin(), label)).toEqual([2]);
    await expectSettledFromPostgres(l, data, 2, 2);
  });

  it('after COMMIT, before the Redis complete: the takeover finds the outcome row and replays it; the tool does not run again', async () => {
    const { l, label, first, data, job } = await crashedAt('after-commit');
    await first.signal('SIGKILL');
    const takeover = await spawn(l);
    const { outcome, value } = await resultOf(l, job);
    expect(outcome).toBe('replayed');
    expect(value).toEqual({ label, writtenBy: 1 });
    expect(await ticketsOf(postgres.admin(), label)).toEqual([1]);
    expect(takeover.messages.filter((m) => m.type === 'transaction-ended')).toEqual([]);
    await expectSettledFromPostgres(l, data, 1, 1);
  });
});

describe('a zombie attempt that lost its lease', () => {
  it('stopped before BEGIN, resumed after the takeover committed: fenced out before its insert, nothing of it commits', async () => {
    const { l, label, first, data, job } = await crashedAt('stop:before-begin');
    await spawn(l);
    const { value } = await resultOf(l, job);
    expect(value).toEqual({ label, writtenBy: 2 });
    await first.signal('SIGCONT');
    expect(await first.waitFor((m) => m.type === 'transaction-ended', STEP_TIMEOUT_MS)).toMatchObject({ committed: false });
    await first.waitFor((m) => m.type === 'fencedOut', STEP_TIMEOUT_MS);
    expect(await ticketsOf(postgres.admin(), label)).toEqual([2]);
    await expectSettledFromPostgres(l, data, 2, 2);
  });

  // The job's only attempt, and a short lock timeout: before the takeover ended the stalled transaction, its insert
  // waited on the zombie's row, ended `contended`, and the model read that nothing ran; then the zombie committed.
  it.each([
    ['stop:before-write', 'its outcome row inserted, before the tool wrote'],
    ['stop:after-write', 'after the tool wrote, before COMMIT'],
  ])(
    'stopped inside its open transaction (%s: %s): the takeover ends that transaction, then runs the call as attempt 2; the zombie, resumed, commits nothing',
    async (crashAt) => {
      const timeouts = { LOCK_TIMEOUT_MS: '500' };
      const l = await lane();
      const label = `call-${process.pid}-${++serial}`;
      const first = await spawn(l, { ...timeouts, CRASH_AT: crashAt });
      const data = jobData([call('record_call', { label }, `toolu_${serial}`)]);
      const job = await l.add(data, { attempts: 1 });
      await first.waitFor(reached(crashAt), STEP_TIMEOUT_MS);
      await spawn(l, timeouts);
      const done = await expectCompleted(l, job);
      const [result] = (done.returnvalue as ToolJobResult).results;
      expect(result!.outcome).toBe('executed');
      expect(JSON.parse(result!.content)).toEqual({ label, writtenBy: 2 });
      expect(result!.content).not.toMatch(/nothing was run/i);
      await first.signal('SIGCONT');
      expect(await first.waitFor((m) => m.type === 'transaction-ended', STEP_TIMEOUT_MS)).toMatchObject({ committed: false });
      await first.waitFor((m) => m.type === 'fencedOut', STEP_TIMEOUT_MS);
      expect(await ticketsOf(postgres.admin(), label)).toEqual([2]);
      const record = await expectSettledFromPostgres(l, data, 2, 2);
      // What the history says was proven: the zombie's transaction was ended, and no row committed.
      expect(record.history.find((e) => e.note?.startsWith('settled from PostgreSQL'))?.note).toMatch(
        /no outcome row of this lifetime committed and none can \(the open transaction of backend \d+ was ended first\)/,
      );
    },
  );
});
