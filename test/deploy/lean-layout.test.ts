/**
 * The previous release beside layout-4 receipts (`receiptLayout: 4`). It
 * predates numbered layouts, so it cannot refuse them by number; and its
 * scripts never read the four fields layout 4 leaves out, so its workers
 * decide on those receipts exactly as this release does (replay, wait, take
 * over, ambiguous) and its takeovers keep them layout 4. What it gets wrong
 * is its read side: it reads the tenant, run, tool and args hash from the
 * fields, so its records of them (its store's, its CLI's `show`) name an
 * empty call, its `resolve`, which finds the receipt by that call, is refused
 * without writing anything, and its reconcile sweep skips the receipt. Then,
 * the setting turned off again: this release still reads and replays them.
 */
import { execFile } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import * as current from '../../src/index.js';
import type { ToolJobResult } from '../../src/bullmq/index.js';
import { toolCallArgsHash } from '../../src/core/index.js';
import { ReceiptStore } from '../../src/redis/index.js';
import { previousRelease, type PreviousRelease } from '../support/previous-release.js';
import { waitForLeaseExpiry, waitUntil } from '../support/redis-fixture.js';
import { startRedis, type RedisHandle } from '../support/redis.js';

type Library = typeof import('../../src/index.js');
type RedisModule = typeof import('../../src/redis/index.js');
const KEY_FIELDS = ['tenant', 'run', 'tool', 'args_hash'];
const EMPTY_CALL = { tenantId: '', runId: '', toolName: '', argsHash: '' };

/** Runs the previous release's CLI, as an operator on a host not yet upgraded would. */
function previousCli(args: readonly string[], prefix: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [release.cli, ...args, '--redis', server.url, '--prefix', prefix],
      { timeout: 30_000 },
      (error, stdout, stderr) => resolve({ code: error ? 1 : 0, stdout, stderr }),
    );
  });
}

let release: PreviousRelease;
let server: RedisHandle;
let redis: Redis;

beforeAll(async () => {
  [release, server] = await Promise.all([previousRelease(), startRedis()]);
  redis = new Redis(server.url, { maxRetriesPerRequest: null });
}, 180_000);

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

it('the previous release decides on layout-4 receipts as this one does, writes nothing wrong, and only its reads miss the names', async () => {
  const old = (await import(pathToFileURL(release.redisEntry).href)) as RedisModule;
  const prefix = `${server.prefix}lean`;
  const oldStore = new old.ReceiptStore({ redis, prefix });
  const store = new ReceiptStore({ redis, prefix, receiptLayout: 4 });
  const key = (argsHash: string) => ({ tenantId: 'acme {eu}', runId: 'run 1', toolName: 'send_email', argsHash });
  const hashOf = (k: ReturnType<typeof key>) => redis.hgetall(store.redisKey(k));
  const unchanged = async (k: ReturnType<typeof key>, write: () => Promise<unknown>) => {
    const before = await hashOf(k);
    await write();
    expect(await hashOf(k)).toEqual(before);
  };

  const done = key('done');
  const first = await store.claim(done, { effect: 'opaque' });
  await store.complete(done, first.fence!, { sent: true });
  await unchanged(done, async () => expect(await oldStore.claim(done, { effect: 'opaque' })).toMatchObject({ result: { sent: true } }));

  const live = key('live');
  await store.claim(live, { effect: 'opaque' });
  await unchanged(live, async () => expect((await oldStore.claim(live, { effect: 'opaque' })).decision.kind).toBe('wait'));

  // A lapsed resumable attempt: the previous release takes it over, and the receipt stays layout 4.
  const [taken, lost] = [key('taken'), key('lost')];
  await store.claim(taken, { effect: 'resumable', leaseMs: 40 });
  await store.claim(lost, { effect: 'opaque', leaseMs: 40 });
  await waitForLeaseExpiry(store, taken);
  await waitForLeaseExpiry(store, lost);
  const takeover = await oldStore.claim(taken, { effect: 'resumable' });
  expect(takeover.decision).toEqual({ kind: 'execute', attempt: 2 });
  await oldStore.complete(taken, takeover.fence!, 'second');
  expect(await hashOf(taken)).toMatchObject({ schema: '4', status: 'completed', attempts: '2' });
  expect(Object.keys(await hashOf(taken)).filter((f) => KEY_FIELDS.includes(f))).toEqual([]);
  expect(await store.inspect(taken)).toMatchObject({ key: taken, status: 'completed', result: 'second', schema: 4 });

  // A lapsed opaque one is ambiguous to both; the previous release's record names an empty call, so its
  // resolve (which finds the receipt by that call) is refused and writes nothing; this release's resolves it.
  expect((await oldStore.claim(lost, { effect: 'opaque' })).decision.kind).toBe('ambiguous');
  const [seenByOld] = await oldStore.listAmbiguous();
  expect(seenByOld).toMatchObject({ redisKey: store.redisKey(lost), key: EMPTY_CALL });
  await unchanged(lost, async () =>
    expect(
      oldStore.resolve(seenByOld!.key, { attemptsSeen: 1, epochSeen: seenByOld!.epoch, outcome: 'failed', error: 'not sent' }),
    ).rejects.toMatchObject({ code: 'receipt.fenced_out' }),
  );
  expect(await oldStore.inspect(lost)).toMatchObject({ key: EMPTY_CALL, status: 'running' });
  const shown = await previousCli(['show', store.redisKey(lost), '--json'], prefix);
  expect(JSON.parse(shown.stdout)).toMatchObject({ redisKey: store.redisKey(lost), key: EMPTY_CALL });
  // Its sweep finds no tool of the empty name: the receipt is skipped, not reconciled.
  const oldLib = (await import(pathToFileURL(release.entry).href)) as Library;
  const reconciled = oldLib.defineTool({
    name: 'send_email',
    input: z.object({}),
    effect: 'opaque',
    destructive: false,
    execute: () => 'sent',
    reconcile: () => ({ status: 'not_started' as const }),
  });
  await unchanged(lost, async () =>
    expect(await oldLib.reconcileAmbiguous({ redis, prefix, tools: [reconciled], logger: pino({ level: 'silent' }) })).toEqual([
      { redisKey: store.redisKey(lost), outcome: 'skipped', reason: 'its tool has no reconcile' },
    ]),
  );
  const [seen] = await store.listAmbiguous();
  expect(seen).toMatchObject({ key: lost, schema: 4 });
  await store.resolve(lost, { attemptsSeen: 1, epochSeen: seen!.epoch, outcome: 'failed', error: 'not sent' });

  // Both count every receipt, from the counting sets and from the receipts themselves.
  for (const reader of [store, oldStore]) {
    for (const scan of [false, true]) {
      expect(await reader.stats({ scan })).toMatchObject({ total: 4, byStatus: { running: 1, completed: 2, failed: 1 }, ambiguous: 0 });
    }
  }
  expect((await oldStore.listRun('acme {eu}', 'run 1')).map((r) => r.key)).toEqual([EMPTY_CALL, EMPTY_CALL, EMPTY_CALL, EMPTY_CALL]);
  // Listed oldest first; two claims in one millisecond tie, and a tie is listed by key, so compare as a set.
  const listed = await store.listRun('acme {eu}', 'run 1');
  expect(listed.map((r) => r.key.argsHash).sort()).toEqual(['done', 'live', 'lost', 'taken']);
  expect(listed.map((r) => r.createdMs)).toEqual(listed.map((r) => r.createdMs).sort((a, b) => a - b));
}, 60_000);

it('workers: layout 4 written, the previous release replays it, and with the setting off again this release still does; no effect twice', async () => {
  const old = (await import(pathToFileURL(release.entry).href)) as Library;
  const prefix = `${server.prefix}leanjobs`;
  const queue = new Queue('calls', { connection: redis, prefix });
  const outbox = `${prefix}:outbox`;
  const running: Worker[] = [];
  const start = (lib: Library, options: { receiptLayout?: 2 | 4 } = {}) => {
    const sendEmail = lib.defineTool({
      name: 'send_email',
      input: z.object({ to: z.string() }),
      effect: 'opaque',
      destructive: false,
      async execute(args, ctx) {
        await redis.rpush(outbox, ctx.idempotencyKey);
        return { sent: true, to: args.to };
      },
    });
    const processor = lib.withToolReceipts({ redis, prefix, tools: [sendEmail], logger: pino({ level: 'silent' }), ...options });
    const worker = new Worker('calls', processor, { connection: new Redis(server.url, { maxRetriesPerRequest: null }), prefix });
    processor.attach(worker);
    running.push(worker);
    return worker;
  };
  const turn = (id: string, ...to: string[]) => ({
    tenantId: 'acme',
    runId: 'run-1',
    calls: to.map((address, i) => ({ id: `toolu_${id}_${i}`, name: 'send_email', input: { to: address } })),
  });
  const run = async (data: ReturnType<typeof turn>): Promise<string[]> => {
    const job: Job = await queue.add('turn', data, { removeOnComplete: false });
    const state = await waitUntil(
      () => job.getState(),
      (s) => s === 'completed' || s === 'failed',
      20_000,
      'the job to finish',
    );
    expect(state).toBe('completed');
    const done = (await queue.getJob(job.id!))!;
    return ((done.returnvalue as ToolJobResult).results ?? []).map((r) => r.outcome);
  };
  const layoutOf = async (address: string) => {
    const hash = await redis.hgetall(
      new ReceiptStore({ redis, prefix }).redisKey({
        tenantId: 'acme',
        runId: 'run-1',
        toolName: 'send_email',
        argsHash: await toolCallArgsHash({ to: address }),
      }),
    );
    return { schema: hash['schema'] ?? null, keyFields: Object.keys(hash).filter((f) => KEY_FIELDS.includes(f)).length };
  };

  try {
    const leanWorker = start(current, { receiptLayout: 4 });
    expect(await run(turn('a', 'a@x.test', 'b@x.test'))).toEqual(['executed', 'executed']);
    expect(await layoutOf('a@x.test')).toEqual({ schema: '4', keyFields: 0 });
    await leanWorker.close();

    // The previous release takes the queue: it replays the layout-4 receipts and writes its own (layout 1).
    const oldWorker = start(old);
    expect(await run(turn('a', 'a@x.test', 'b@x.test'))).toEqual(['replayed', 'replayed']);
    expect(await run(turn('b', 'c@x.test'))).toEqual(['executed']);
    expect(await layoutOf('c@x.test')).toEqual({ schema: null, keyFields: 4 });
    await oldWorker.close();

    // Back to layout 2 (the setting this release runs with beside an earlier one): it still replays layout 4.
    start(current, { receiptLayout: 2 });
    expect(await run(turn('a', 'a@x.test', 'b@x.test', 'd@x.test'))).toEqual(['replayed', 'replayed', 'executed']);
    expect(await layoutOf('d@x.test')).toEqual({ schema: '2', keyFields: 4 });
    expect(await layoutOf('a@x.test')).toEqual({ schema: '4', keyFields: 0 });

    const effects = await redis.lrange(outbox, 0, -1);
    expect(effects).toHaveLength(4);
    expect(new Set(effects).size).toBe(effects.length);
  } finally {
    await Promise.all(running.map((w) => w.close()));
    await queue.close();
  }
}, 60_000);
