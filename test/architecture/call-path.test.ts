/**
 * Following one executed call from its job to its complete: the source
 * files whose functions run between the job's start and its completion,
 * measured with V8's precise coverage (call counts) in this process, after
 * a first job has loaded and warmed everything. docs/architecture.md lists
 * the path; this says how many files it really touches, and how many of
 * them are outside the helper rooms (the spine a reader follows).
 */
import { randomBytes } from 'node:crypto';
import { Session } from 'node:inspector/promises';
import { fileURLToPath } from 'node:url';
import { Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, withToolReceipts } from '../../src/bullmq/index.js';
import { LOAD_AFTER_RUNS } from '../../src/redis/connection/clients/functions.js';
import { useRedis } from '../support/redis-fixture.js';
import { call, silent } from '../bullmq/fixture.js';

const redis = useRedis();
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

interface ScriptCoverage {
  readonly url: string;
  readonly functions: readonly { readonly functionName: string; readonly ranges: readonly { readonly count: number }[] }[];
}

/**
 * The helper rooms: pure functions, what a tool is and how its input and
 * result are shaped, the client adapter, the script loader, the channel's
 * batching. A file outside them that runs is on the spine.
 */
const HELPER_ROOMS = [
  /^core\//,
  /^bullmq\/tools\//,
  /^redis\/keys\.ts$/,
  /^redis\/settings\.ts$/,
  /^redis\/connection\//,
  /^redis\/scripts\//,
  /^redis\/durability\//,
];
const isHelper = (file: string): boolean => HELPER_ROOMS.some((room) => room.test(file));

/** The files under src/ with a function that ran since the last take, by path from src/. */
function ranSince(coverage: readonly ScriptCoverage[]): string[] {
  const files = new Set<string>();
  for (const script of coverage) {
    const path = script.url.startsWith('file://') ? fileURLToPath(script.url.split('?')[0]!) : script.url.split('?')[0]!;
    if (!path.startsWith(SRC)) continue;
    if (script.functions.some((f) => (f.ranges[0]?.count ?? 0) > 0)) files.add(path.slice(SRC.length));
  }
  return [...files].sort();
}

describe('one executed call, from its job to its complete', () => {
  it('runs the functions of the files docs/architecture.md lists', async () => {
    const prefix = `${redis.handle().prefix}${randomBytes(3).toString('hex')}`;
    const connect = () => {
      const c = new Redis(redis.handle().url, { maxRetriesPerRequest: null });
      closers.push(async () => c.disconnect());
      return c;
    };
    const notify = defineTool({
      name: 'notify',
      input: z.object({ to: z.string() }),
      effect: 'opaque',
      destructive: false,
      execute: (args) => ({ notified: args.to }),
    });
    const queue = new Queue('path', { connection: connect(), prefix });
    const events = new QueueEvents('path', { connection: connect(), prefix });
    await events.waitUntilReady();
    const processor = withToolReceipts({ redis: connect(), prefix, tools: [notify], logger: silent });
    const worker = new Worker('path', processor, { connection: connect(), prefix });
    processor.attach(worker);
    closers.push(
      () => queue.close(),
      () => events.close(),
      () => worker.close(true),
    );
    const runOne = async () => {
      const data = { tenantId: 'acme', runId: `run-${randomBytes(4).toString('hex')}`, calls: [call('notify', { to: 'ops' })] };
      const job = await queue.add('call', data);
      return job.waitUntilFinished(events, 30_000);
    };

    // Loads and warms every module on the path. A script's library is loaded once it has run LOAD_AFTER_RUNS times
    // (FCALL from then on, docs/redis.md#scripts-as-functions): one job more makes sure they are in before the measured one.
    for (let i = 0; i <= LOAD_AFTER_RUNS; i++) await runOne();
    const session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
    await session.post('Profiler.takePreciseCoverage'); // resets the counts
    const result = await runOne();
    const { result: coverage } = (await session.post('Profiler.takePreciseCoverage')) as { result: ScriptCoverage[] };
    await session.post('Profiler.stopPreciseCoverage');
    session.disconnect();

    expect(result).toMatchObject({ results: [{ outcome: 'executed' }] });
    const files = ranSince(coverage);
    if (process.env['CALL_PATH_FUNCTIONS']) {
      for (const script of coverage) {
        const ran = script.functions.filter((f) => (f.ranges[0]?.count ?? 0) > 0).map((f) => `${f.functionName}×${f.ranges[0]!.count}`);
        if (ran.length > 0 && script.url.includes('/src/')) console.log(script.url.split('/src/')[1], ran.join(' '));
      }
    }
    console.log(`one executed call ran functions in ${files.length} source files:\n  ${files.join('\n  ')}`);
    const spine = files.filter((file) => !isHelper(file));
    console.log(`outside the helper rooms, ${spine.length}:\n  ${spine.join('\n  ')}`);
    // The wrapper's part of the spine: the five files docs/architecture.md lists (the job, its turn, the call run, what
    // its execution runs under, its facts), no outcome branch, and nothing of repair, offload or limits (entered only
    // when a call needs them: an input that does not parse, a result over its cap or a store, a limit).
    expect(spine.filter((file) => file.startsWith('bullmq/'))).toEqual([
      'bullmq/call/call-run.ts',
      'bullmq/call/execution.ts',
      'bullmq/call/facts.ts',
      'bullmq/processor.ts',
      'bullmq/turn/turn.ts',
    ]);
    expect(files.filter((file) => file.startsWith('bullmq/outcomes/'))).toEqual([]);
    expect(spine.filter((file) => /^(repair|offload|limits)\//.test(file))).toEqual([]);
    // The store's part: the call side of the store, the claim, and the channel.
    expect(spine.filter((file) => file.startsWith('redis/'))).toEqual([
      'redis/receipts/channel.ts',
      'redis/receipts/store.ts',
      'redis/receipts/transitions/claim.ts',
    ]);
    // Issue #31: at most 8 files outside the helper rooms, and the total (helpers included) kept from growing.
    expect(spine.length).toBeLessThanOrEqual(8);
    expect(files.length).toBeLessThanOrEqual(19);
    // The channel sends a package script to the adapter itself: the loader is not entered once the script is known.
    expect(files).not.toContain('redis/scripts/scripts.ts');
  });
});
