/**
 * The move to the compact receipt layout (layout 5) in the two steps
 * docs/upgrading.md tells users to deploy, under SIGKILLs, against release
 * 867854b (the last before layout 5; it reads layouts up to 4):
 * 1. that release's workers beside this release's with `receiptLayout: 2`
 *    (reads 5, writes 2), until none of that release is left;
 * 2. this release with `receiptLayout: 2` beside this release writing layout
 *    5, then back (the rollback of step 2).
 * And what the earlier release does with a layout-5 receipt: refuses it
 * typed (`receipt.version`), its store, CLI and workers, writing nothing.
 *
 * It holds: no effect lands twice; every job completes or fails as an
 * ambiguous call does; each receipt keeps the layout its claim created it in
 * whichever worker writes it later; in step 1 every receipt is layout 2 and
 * both releases read each one the same; in step 2 this release's store and
 * CLI read every receipt of both layouts.
 */
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { duplicateEffects, readOutbox } from '../../examples/outbox-tools.js';
import { idempotencyKeyFor } from '../../src/bullmq/index.js';
import { ReceiptStore, type ReceiptRecord } from '../../src/redis/index.js';
import { spawnCli } from '../cli/support.js';
import { layoutSteps } from '../support/layout-steps.js';
import { PRE_COMPACT_RELEASE_COMMIT } from '../support/previous-release.js';
import { waitUntil } from '../support/redis-fixture.js';
import {
  core,
  deployFleet,
  DRAIN_TIMEOUT_MS,
  previousCli,
  resolveArgs,
  turn,
  useReleaseAndRedis,
  verdictOf,
  type Fleet,
} from '../support/rolling-deploy.js';

const made = useReleaseAndRedis(PRE_COMPACT_RELEASE_COMMIT);
const byKey = (x: { redisKey: string }, y: { redisKey: string }) => (x.redisKey < y.redisKey ? -1 : x.redisKey > y.redisKey ? 1 : 0);

/** Checks that no effect landed twice and every job completed or failed as a job with an ambiguous call does. */
async function expectAtMostOnce(deploy: Fleet, prefix: string) {
  const effects = await readOutbox(deploy.redis, prefix);
  expect(duplicateEffects(effects)).toEqual([]);
  for (const job of deploy.jobs) {
    const done = (await deploy.queue.getJob(job.id!))!;
    const state = await done.getState();
    expect(
      state === 'completed' || (state === 'failed' && /ambiguous/.test(done.failedReason)),
      `job ${done.id}: ${state} ${done.failedReason}`,
    ).toBe(true);
  }
  return effects;
}

/** The count of each status among `records`, every status present. */
function statusCounts(records: readonly ReceiptRecord[]) {
  const byStatus: Record<string, number> = { running: 0, completed: 0, failed: 0 };
  for (const r of records) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
  return byStatus;
}

it('step 1: the earlier release beside this one with receiptLayout: 2, under SIGKILLs: nothing twice, every receipt layout 2 and read the same by both', async () => {
  const { release, server } = made;
  const prefix = `${server.prefix}compact1`;
  const deploy = await deployFleet({ release, server, prefix });
  const { redis, store, oldStore, fleet, replace, killFrozen, turns, enqueue, batch, drain, flowing } = deploy;
  const { settled, expectKept } = layoutSteps(deploy, prefix);
  const cli = (args: readonly string[]) => spawnCli([...args, '--prefix', prefix], server.url);
  const oldCli = (args: readonly string[]) => previousCli(release, server, args, prefix);

  try {
    // The earlier release alone; its first worker to land a post_message is SIGKILLed there (an ambiguous call)
    // and replaced by one of this release with receiptLayout: 2.
    fleet.push(...(await Promise.all([deploy.spawn('previous'), deploy.spawn('previous'), deploy.spawn('previous')])));
    await batch('a', 6);
    await killFrozen('previous', 'current-2');
    // Both releases share the queue: new turns and batch a again, a worker of the earlier release SIGKILLed
    // mid-work and replaced by one of this release.
    await batch('b', 6);
    for (const i of [0, 1, 2, 3]) await enqueue(turns.get(`a${i}`)!);
    await flowing('batch b to flow before a SIGKILL');
    await replace(
      fleet.findIndex((s) => s.kind === 'previous'),
      'current-2',
    );
    // (A worker of this release may have frozen after a post meanwhile: its turn waits for the SIGKILL below.)
    await drain('every job to finish with both releases on the queue', 'frozen');
    await settled('both releases');

    // Step 1 done: the last worker of the earlier release replaced; this release's first to land a post is
    // SIGKILLed there; batch b again, replayed by this release.
    const beforeReplays = new Map((await deploy.listAll(store)).map((r) => [r.redisKey, r]));
    for (const slot of fleet.keys()) {
      if (fleet[slot]!.kind !== 'previous') continue;
      await flowing(`jobs to flow before slot ${slot} turns current-2`);
      await replace(slot, 'current-2');
    }
    await batch('c', 6);
    await killFrozen('current-2', 'current-2');
    const replays = (await Promise.all([...Array(6).keys()].map((i) => enqueue(turns.get(`b${i}`)!)))).flat();
    await drain('every job to finish on the reading release');
    await settled('reading release');
    expect(await deploy.expectReplayed(replays, beforeReplays, 2)).toBeGreaterThan(0);

    // The ambiguous calls, resolved from what the outbox says landed: the first with the earlier release's CLI,
    // the second with this release's, the rest with the earlier release's store.
    const ambiguous = await store.listAmbiguous();
    expect(ambiguous.length).toBeGreaterThanOrEqual(2);
    const outbox = await readOutbox(redis, prefix);
    for (const [i, record] of ambiguous.entries()) {
      const verdict = verdictOf(outbox, record);
      if (i > 1) {
        await oldStore.resolve(record.key, verdict);
        continue;
      }
      const ran = await (i === 0 ? oldCli : cli)(resolveArgs(record, verdict));
      expect(ran, ran.stderr).toMatchObject({ code: 0 });
    }
    expect(await oldStore.listAmbiguous()).toEqual([]);
    await settled('resolved');

    const effects = await expectAtMostOnce(deploy, prefix);
    expect(new Set(effects.map((e) => (e as { release?: string }).release))).toEqual(new Set(['previous', 'current-2']));
    const decisions = await redis.hgetall(`${prefix}:deploy:decisions`);
    for (const key of ['previous:execute', 'current-2:execute', 'current-2:replay'])
      expect(Number(decisions[key] ?? 0), key).toBeGreaterThan(0);

    // Every receipt is layout 2, whichever release wrote it, and reads the same through both releases' stores.
    const final = expectKept({ steps: { 'both releases': ['2'], 'reading release': ['2'], resolved: [] }, batches: {}, held: new Set() });
    expect(new Set(final.values())).toEqual(new Set(['2']));
    const current = (await deploy.listAll(store)).sort(byKey);
    expect(current.map((r) => r.redisKey)).toEqual([...final.keys()].sort());
    expect((await deploy.listAll(oldStore)).sort(byKey).map(core)).toEqual(current.map(core));
    for (const reader of [store, oldStore])
      expect(await reader.stats()).toMatchObject({ total: current.length, byStatus: statusCounts(current), ambiguous: 0 });

    // Each release's CLI shows a receipt the other release's worker completed as its own store reads it.
    const completedBy = (kind: string) =>
      current.find(
        (r) =>
          r.status === 'completed' &&
          r.attempts === 1 &&
          effects.some((e) => (e as { release?: string }).release === kind && e.idempotencyKey === idempotencyKeyFor(r.key)),
      )!;
    const byCurrent = completedBy('current-2');
    expect(core(JSON.parse((await oldCli(['show', byCurrent.redisKey, '--json'])).stdout))).toEqual(core(byCurrent));
    const byPrevious = completedBy('previous');
    expect(core(JSON.parse((await cli(['show', byPrevious.redisKey, '--json'])).stdout))).toEqual(core(byPrevious));

    console.log(
      `compact layout, step 1: ${deploy.enqueued} jobs, ${deploy.kills} workers SIGKILLed, ${effects.length} effects; ` +
        `${current.length} receipts, ${ambiguous.length} ambiguous resolved across releases; decisions ${JSON.stringify(decisions)}`,
    );
  } finally {
    await deploy.close();
  }
}, 240_000);

it('step 2 and its rollback: receiptLayout: 2 beside layout 5 under SIGKILLs, then 2 again: nothing twice, each receipt keeps its layout, this release reads all', async () => {
  const { release, server } = made;
  const prefix = `${server.prefix}compact2`;
  // Freezes, SIGKILLed later: a reading worker in a create_ticket call it created, for a writing one to take
  // over; a writing one there too, for the rollback, and after a post_message's effect (an ambiguous call).
  const deploy = await deployFleet({
    release,
    server,
    prefix,
    freeze: { 'current-2': ['create_ticket'], 'current-5': ['post_message', 'create_ticket'] },
  });
  const { redis, store, fleet, turns, enqueue, batch, drain } = deploy;
  const { settled, expectKept, callOf, rollTo, expectTakenOver } = layoutSteps(deploy, prefix);
  const cli = (args: readonly string[]) => spawnCli([...args, '--prefix', prefix], server.url);

  try {
    // Step 1's end: only this release, with receiptLayout: 2; one worker freezes in a ticket's call.
    fleet.push(...(await Promise.all([deploy.spawn('current-2'), deploy.spawn('current-2')])));
    await batch('a', 6);
    const readingTicket = await deploy.frozen('current-2', 'create_ticket');
    const readingSlot = fleet.findIndex((s) => s.worker === readingTicket.worker);
    await drain('the reading fleet to finish batch a', [readingTicket.said.callId]);
    const firstTicket = await callOf(readingTicket.said.callId);
    expect((await settled('reading release')).get(firstTicket.redisKey)).toBe('2');

    // Step 2: receiptLayout: 5 by a rolling restart under load, the frozen worker last, so a writing worker takes
    // its layout-2 receipt over (it stays 2). Then new turns, and batch a again (layout 5 workers replay layout 2).
    await batch('b', 6);
    await rollTo('current-5', [readingSlot]);
    await expectTakenOver(firstTicket, readingTicket.said.idempotencyKey, 2, ['current-2', 'current-5']);
    const beforeStep2Replays = new Map((await deploy.listAll(store)).map((r) => [r.redisKey, r]));
    await batch('c', 6);
    const aReplays = (
      await Promise.all(
        [0, 2, 4]
          .map((i) => turns.get(`a${i}`)!)
          .filter((t) => t !== firstTicket.data)
          .map((t) => enqueue(t)),
      )
    ).flat();
    const lostPost = await deploy.frozen('current-5', 'post_message');
    const lostTicket = await deploy.frozen('current-5', 'create_ticket');
    await drain('every turn but the frozen ones to finish in layout 5', [lostPost.said.callId, lostTicket.said.callId]);
    const [post, ticket] = [await callOf(lostPost.said.callId), await callOf(lostTicket.said.callId)];
    const written = await settled('writing release');
    expect([written.get(post.redisKey), written.get(ticket.redisKey)]).toEqual(['5', '5']);
    expect(await deploy.expectReplayed(aReplays, beforeStep2Replays, 2)).toBeGreaterThan(0);

    // The rollback: receiptLayout: 2 again by a rolling restart under load, the worker frozen in create_ticket
    // last, so a reading worker takes its layout-5 receipt over (it stays 5). Then new turns, and batch c again:
    // the reading release replays layout-5 receipts.
    await batch('d', 4);
    await rollTo('current-2', [fleet.findIndex((s) => s.worker === lostTicket.worker)]);
    await expectTakenOver(ticket, lostTicket.said.idempotencyKey, 5, ['current-5', 'current-2']);
    const beforeRollbackReplays = new Map((await deploy.listAll(store)).map((r) => [r.redisKey, r]));
    await batch('e', 4);
    const cTurns = [...Array(6).keys()].map((i) => turns.get(`c${i}`)!).filter((t) => t !== post.data && t !== ticket.data);
    const cReplays = (await Promise.all(cTurns.map((t) => enqueue(t)))).flat();
    await drain('every job to finish after the rollback');
    await settled('rolled back');
    expect(await deploy.expectReplayed(cReplays, beforeRollbackReplays, 5)).toBeGreaterThan(0);

    // The ambiguous calls, the layout-5 post among them, resolved with this release's CLI from the outbox.
    const ambiguous = await store.listAmbiguous();
    expect(ambiguous.find((r) => r.redisKey === post.redisKey)).toMatchObject({ key: post.key, schema: 5 });
    const outbox = await readOutbox(redis, prefix);
    for (const record of ambiguous) {
      const ran = await cli(resolveArgs(record, verdictOf(outbox, record)));
      expect(ran, ran.stderr).toMatchObject({ code: 0 });
    }
    expect(await store.inspect(post.key)).toMatchObject({ key: post.key, schema: 5 });
    await settled('resolved');

    const effects = await expectAtMostOnce(deploy, prefix);
    const decisions = await redis.hgetall(`${prefix}:deploy:decisions`);
    for (const key of ['current-2:execute', 'current-5:execute', 'current-5:replay', 'current-2:replay'])
      expect(Number(decisions[key] ?? 0), key).toBeGreaterThan(0);

    // Each receipt kept the layout its claim created it in; batches one kind ran alone have its layout.
    const held = new Set((await Promise.all([firstTicket, post, ticket].map((call) => deploy.receiptKeys(call.data)))).flat());
    const final = expectKept({
      steps: { 'reading release': ['2'], 'writing release': ['2', '5'], 'rolled back': ['2', '5'], resolved: [] },
      batches: { a: ['2'], c: ['5'], e: ['2'] },
      held,
    });
    expect(new Set(final.values())).toEqual(new Set(['2', '5']));

    // This release reads every receipt of both layouts: its store lists each one SCAN found under the key it
    // names; its CLI shows one of each layout, lists a run holding both, and counts them all.
    const current = (await deploy.listAll(store)).sort(byKey);
    expect(current.map((r) => r.redisKey)).toEqual([...final.keys()].sort());
    for (const r of current) expect([store.redisKey(r.key), r.schema]).toEqual([r.redisKey, Number(final.get(r.redisKey))]);
    for (const layout of [2, 5]) {
      const one = current.find((r) => r.schema === layout && r.status === 'completed')!;
      const shown = await cli(['show', one.redisKey, '--json']);
      expect(core(JSON.parse(shown.stdout)), `layout ${layout}`).toEqual(core(one));
    }
    const layoutsIn = (run: string) => new Set(current.filter((r) => r.key.runId === run).map((r) => r.schema)).size;
    const mixedRun = [...new Set(current.map((r) => r.key.runId))].sort((x, y) => layoutsIn(y) - layoutsIn(x))[0]!;
    expect(layoutsIn(mixedRun)).toBe(2);
    const listed = (await store.listRun('acme', mixedRun)).map(core);
    expect((JSON.parse((await cli(['run', 'acme', mixedRun, '--json'])).stdout) as { receipts: object[] }).receipts.map(core)).toEqual(
      listed,
    );
    const counts = { total: current.length, byStatus: statusCounts(current), ambiguous: 0 };
    for (const scan of [false, true]) expect(await store.stats({ scan })).toMatchObject(counts);
    for (const flags of [[], ['--scan']]) expect(JSON.parse((await cli(['stats', ...flags, '--json'])).stdout)).toMatchObject(counts);

    const byLayout = (n: string) => [...final.values()].filter((l) => l === n).length;
    console.log(
      `compact layout, step 2 and rollback: ${deploy.enqueued} jobs, ${deploy.kills} workers SIGKILLed, ${effects.length} effects; ` +
        `${final.size} receipts (${byLayout('2')} layout 2, ${byLayout('5')} layout 5), ${ambiguous.length} ambiguous resolved; ` +
        `decisions ${JSON.stringify(decisions)}`,
    );
  } finally {
    await deploy.close();
  }
}, 240_000);

it('the earlier release refuses layout-5 receipts typed, its store, CLI and worker, and writes nothing; this release replays them', async () => {
  const { release, server } = made;
  const prefix = `${server.prefix}compact3`;
  const deploy = await deployFleet({ release, server, prefix });
  const { redis, queue, oldStore, fleet, enqueue } = deploy;
  const old = (await import(pathToFileURL(release.redisEntry).href)) as typeof import('../../src/redis/index.js');
  const compact = new ReceiptStore({ redis, prefix, receiptLayout: 5 });
  const oldCli = (args: readonly string[]) => previousCli(release, server, args, prefix);
  /**
   * Every key under the prefix and what it holds: receipts, run indexes and
   * counting sets whole; of the run registry, its runs only (an earlier
   * release's claim registers its run, refreshing its time, before it reads
   * the receipt).
   */
  const everything = async () => {
    const keys = (await redis.keys(`${prefix}:*`)).filter((k) => !/^:(deploy|demo|tool-calls):/.test(k.slice(prefix.length))).sort();
    return Object.fromEntries(
      await Promise.all(
        keys.map(
          async (k) => [k, k.includes(':runs:') ? await redis.zrange(k, 0, -1) : (await redis.dumpBuffer(k))?.toString('hex')] as const,
        ),
      ),
    );
  };
  const finished = (jobId: string) =>
    waitUntil(
      async () => (await queue.getJob(jobId))!.getState(),
      (state) => state === 'completed' || state === 'failed',
      DRAIN_TIMEOUT_MS,
      `job ${jobId} to finish`,
    );

  try {
    // Layout-5 receipts as this release writes them: a completed call with a result long enough to be kept in
    // parts, and a running one.
    const key = (argsHash: string) => ({ tenantId: 'acme', runId: 'run-refused', toolName: 'send_email', argsHash });
    const [done, live] = [key('a'.repeat(64)), key('b'.repeat(64))];
    const first = await compact.claim(done, { effect: 'opaque' });
    await compact.complete(done, first.fence!, { content: 'x'.repeat(300) });
    await compact.claim(live, { effect: 'opaque' });
    expect(await redis.hget(compact.redisKey(done), 'result_parts')).not.toBeNull();
    const before = await everything();

    // Its store: every read and write refused as receipt.version, typed, naming the receipt and both layouts.
    const refused = (await oldStore.claim(done, { effect: 'opaque' }).catch((error: unknown) => error)) as Error;
    expect(refused).toBeInstanceOf(old.ReceiptVersionError);
    expect(refused).toMatchObject({ code: 'receipt.version', redisKey: compact.redisKey(done), foundVersion: 5, supportedVersion: 4 });
    const fence = { attemptsSeen: 1, epochSeen: (await compact.inspect(live))!.epoch };
    for (const attempt of [
      () => oldStore.claim(live, { effect: 'opaque' }),
      () => oldStore.inspect(done),
      () => oldStore.resolve(live, { ...fence, outcome: 'failed', error: 'not sent' }),
      () => oldStore.listAmbiguous(),
    ])
      await expect(attempt()).rejects.toMatchObject({ code: 'receipt.version', foundVersion: 5 });
    // Its CLI: `show` and `resolve` exit non-zero with that sentence; `ambiguous` skips the receipt, naming it.
    const refusedBy = /receipt schema 5; this release reads up to 4\); nothing was read or written/;
    for (const args of [
      ['show', compact.redisKey(done)],
      resolveArgs((await compact.inspect(live))!, { ...fence, outcome: 'failed', error: 'not sent' }),
    ]) {
      const ran = await oldCli(args);
      expect(ran.code, args[0]).not.toBe(0);
      expect(ran.stderr, args[0]).toMatch(refusedBy);
    }
    expect((await oldCli(['ambiguous'])).stdout).toContain(`Skipped a receipt a newer release wrote: ${compact.redisKey(live)} (schema 5`);
    expect(await everything()).toEqual(before);

    // Its worker: a turn whose receipts a layout-5 worker wrote fails with receipt.version on every attempt,
    // running nothing and writing nothing; a worker of this release with receiptLayout: 2 then replays it.
    const data = turn('z', 0); // send_email, create_ticket and charge_card
    fleet.push(await deploy.spawn('current-5'));
    const [written] = await enqueue(data);
    expect(await finished(written!.id!)).toBe('completed');
    const keys = await deploy.receiptKeys(data);
    expect(await Promise.all(keys.map((k) => redis.hget(k, 'schema')))).toEqual(keys.map(() => '5'));
    await deploy.replace(0, 'previous');
    const effectsBefore = await readOutbox(redis, prefix);
    const receiptsBefore = await everything();
    const [met] = await enqueue(data);
    expect(await finished(met!.id!)).toBe('failed');
    expect((await queue.getJob(met!.id!))!.failedReason).toMatch(/schema 5; this release reads up to 4/);
    expect(await everything()).toEqual(receiptsBefore);
    expect(await readOutbox(redis, prefix)).toEqual(effectsBefore);
    await deploy.replace(0, 'current-2');
    const [replayed] = await enqueue(data);
    expect(await finished(replayed!.id!)).toBe('completed');
    expect((await queue.getJob(replayed!.id!))!.returnvalue.results.map((r: { outcome: string }) => r.outcome)).toEqual(
      data.calls.map(() => 'replayed'),
    );
    expect(await readOutbox(redis, prefix)).toEqual(effectsBefore);
  } finally {
    await deploy.close();
  }
}, 120_000);

// Not yet true, and tracked here so it is seen when it becomes true: the earlier release reads a run's index
// members as receipt keys, so on a run holding layout-5 receipts (whose members are short, not keys) its
// `listRun` (its `tool-receipts run`, its console's run page) neither refuses nor lists them: its prune-index
// script finds no hash under each short member and removes it, as the entry of an expired receipt, and this
// release then no longer lists those receipts in their run. docs/upgrading.md says so.
it.fails(
  'the earlier release lists a run holding layout-5 receipts without writing to its index',
  async () => {
    const { release, server } = made;
    const prefix = `${server.prefix}compactrun`;
    const redis = new Redis(server.url);
    try {
      const old = (await import(pathToFileURL(release.redisEntry).href)) as typeof import('../../src/redis/index.js');
      const compact = new ReceiptStore({ redis, prefix, receiptLayout: 5 });
      const key = { tenantId: 'acme', runId: 'run-listed', toolName: 'send_email', argsHash: 'c'.repeat(64) };
      const claimed = await compact.claim(key, { effect: 'opaque' });
      await compact.complete(key, claimed.fence!, { sent: true });
      const runIndex = `${prefix}:run:{acme|run-listed}`;
      const indexed = await redis.zrange(runIndex, 0, -1);
      expect(indexed).toHaveLength(1);
      await new old.ReceiptStore({ redis, prefix }).listRun('acme', 'run-listed').catch(() => undefined);
      expect(await redis.zrange(runIndex, 0, -1)).toEqual(indexed);
    } finally {
      redis.disconnect();
    }
  },
  30_000,
);
