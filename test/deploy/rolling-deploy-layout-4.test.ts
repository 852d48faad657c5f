/**
 * The rolling deploy with receipt layout 4, the way docs/upgrading.md tells
 * users to run it, under SIGKILLs: a fleet of this checkout's workers in the
 * default layout; `receiptLayout: 4` switched on by a rolling restart while
 * turns flow (workers with and without it share the queue); then the
 * rollback: the setting turned off by another rolling restart, and the
 * previous release's workers beside the layout-4 receipts that remain.
 *
 * It holds: no effect lands twice; every job completes or fails as an
 * ambiguous call does; each receipt keeps the layout its claim created it in
 * through every later attempt, whichever worker makes it (a layout-4 receipt
 * is never rewritten to another layout, a layout-2 one never raised to 4);
 * this release's store and CLI read every layout; the previous release
 * replays layout-4 receipts with their stored result, reports a lapsed one
 * ambiguous, and only its reads miss the names (an empty call; its resolve
 * refused, writing nothing).
 */
import type { Job } from 'bullmq';
import { expect, it } from 'vitest';
import { duplicateEffects, readOutbox } from '../../examples/outbox-tools.js';
import type { ToolJobResult } from '../../src/bullmq/index.js';
import type { ReceiptRecord } from '../../src/redis/index.js';
import { spawnCli } from '../cli/support.js';
import { layoutSteps } from '../support/layout-steps.js';
import { core, deployFleet, previousCli, resolveArgs, useReleaseAndRedis, verdictOf, type Turn } from '../support/rolling-deploy.js';

const KEY_FIELDS = ['tenant', 'run', 'tool', 'args_hash'];
const EMPTY_CALL = { tenantId: '', runId: '', toolName: '', argsHash: '' };
/**
 * The layouts a receipt first read at a step can have: those the workers
 * running since the step before create receipts in (none at a step that only
 * resolves).
 */
const STEP_LAYOUTS: Record<string, readonly string[]> = {
  'default layout': ['2'],
  'layout 4 on': ['2', '4'],
  'layout 4 off': ['2', '4'],
  resolved: [],
  'rolled back': ['1', '2'],
  'all resolved': [],
};
/**
 * Batches enqueued while one kind of worker ran alone, and finished before
 * another came (but the turns a frozen worker held): only that kind created
 * their receipts.
 */
const BATCH_LAYOUTS: Record<string, readonly string[]> = { a: ['2'], c: ['4'], e: ['2'], g: ['1'] };

const made = useReleaseAndRedis();

it('layout 4 switched on and off by rolling restarts under SIGKILLs, then the previous release beside its receipts: nothing twice, every receipt keeps its layout', async () => {
  const { release, server } = made;
  const prefix = `${server.prefix}deploy4`;
  // Freezes (one worker of a kind each, SIGKILLed there later): this release's default-layout workers in a
  // create_ticket call they created, for a layout-4 worker to take over; its layout-4 workers there too, for a
  // default-layout one, and after a post_message's effect, an ambiguous call for the previous release to meet.
  const deploy = await deployFleet({
    release,
    server,
    prefix,
    freeze: { current: ['create_ticket'], 'current-4': ['post_message', 'create_ticket'], previous: ['post_message'] },
  });
  const { redis, queue, store, oldStore, fleet, replace, turns, enqueue, batch, drain, flowing } = deploy;
  const cli = (args: readonly string[]) => spawnCli([...args, '--prefix', prefix], server.url);
  const oldCli = (args: readonly string[]) => previousCli(release, server, args, prefix);

  const { settled, expectKept, callOf, rollTo, expectTakenOver: takenOver } = layoutSteps(deploy, prefix);
  const keyFieldsOf = async (redisKey: string) => (await redis.hkeys(redisKey)).filter((f) => KEY_FIELDS.includes(f));
  /** Checks that every call of each (finished) job was replayed. */
  const everyCallReplayed = async (jobs: readonly Job[]) => {
    for (const job of jobs) {
      const done = (await queue.getJob(job.id!))!;
      const outcomes = ((done.returnvalue as ToolJobResult | undefined)?.results ?? []).map((r) => r.outcome);
      expect(outcomes, `job ${done.id} (${done.failedReason ?? 'completed'})`).toEqual(done.data.calls.map(() => 'replayed'));
    }
  };
  /** A frozen create_ticket call taken over (see layoutSteps), its receipt `layout` with its names only in layout 2. */
  const expectTakenOver = async (...args: Parameters<typeof takenOver>) => {
    await takenOver(...args);
    expect(await keyFieldsOf(args[0].redisKey)).toHaveLength(args[2] === 4 ? 0 : KEY_FIELDS.length);
  };

  try {
    // 1. This release in the default layout, under load and a SIGKILL; one worker freezes in a ticket's call.
    fleet.push(...(await Promise.all([deploy.spawn('current'), deploy.spawn('current'), deploy.spawn('current')])));
    await batch('a', 8);
    const defaultTicket = await deploy.frozen('current', 'create_ticket');
    const defaultSlot = fleet.findIndex((s) => s.worker === defaultTicket.worker);
    await flowing('batch a to flow before a SIGKILL');
    await replace((defaultSlot + 1) % fleet.length, 'current');
    await drain('the default-layout fleet to finish batch a', [defaultTicket.said.callId]);
    const defaultLayouts = await settled('default layout');
    const oldTicket = await callOf(defaultTicket.said.callId);
    expect(defaultLayouts.get(oldTicket.redisKey)).toBe('2');

    // 2. receiptLayout: 4 switched on by a rolling restart while turns flow: each worker SIGKILLed mid-work and
    // replaced by one with the setting, so for a while both kinds take the queue; the frozen one goes last, and a
    // layout-4 worker takes its layout-2 receipt over: it stays 2, with its names.
    await batch('b', 10);
    await rollTo('current-4', [defaultSlot]);
    await expectTakenOver(oldTicket, defaultTicket.said.idempotencyKey, 2, ['current', 'current-4']);
    // Then new turns, and the turns of batch a without a post_message or the frozen call (layout-4 workers replay
    // layout-2 receipts). A layout-4 worker freezes after a post_message's effect, and one in a create_ticket
    // call it created: both left live for the switch back to kill.
    await batch('c', 8);
    const aTurns = [0, 2, 4, 6].map((i) => turns.get(`a${i}`)!).filter((t) => t !== oldTicket.data);
    const aReplays = (await Promise.all(aTurns.map((data) => enqueue(data)))).flat();
    const lostPost = await deploy.frozen('current-4', 'post_message');
    const lostTicket = await deploy.frozen('current-4', 'create_ticket');
    await drain('every turn but the frozen ones to finish in layout 4', [lostPost.said.callId, lostTicket.said.callId]);
    const layout4Layouts = await settled('layout 4 on');
    const ticket = await callOf(lostTicket.said.callId);
    const post = await callOf(lostPost.said.callId);
    expect(layout4Layouts.get(ticket.redisKey)).toBe('4');
    expect(layout4Layouts.get(post.redisKey)).toBe('4');
    await everyCallReplayed(aReplays);

    // 3. The rollback, first step: the setting turned off by a rolling restart under load, the worker frozen in
    // create_ticket killed last, so a default-layout worker takes its layout-4 receipt over.
    await batch('d', 8);
    await rollTo('current', [fleet.findIndex((s) => s.worker === lostTicket.worker)]);
    await expectTakenOver(ticket, lostTicket.said.idempotencyKey, 4, ['current-4', 'current']);
    // New turns in the default layout again, and batch c again: default-layout workers replay layout-4 receipts.
    await batch('e', 6);
    const cTurns = [...Array(8).keys()].map((i) => turns.get(`c${i}`)!).filter((t) => t !== post.data);
    const cReplays = (await Promise.all(cTurns.map((data) => enqueue(data)))).flat();
    await drain('every job to finish with the setting off');
    await settled('layout 4 off');
    // (The frozen ticket's turn may still be running its last call when its replay comes: left out.)
    await everyCallReplayed(cReplays.filter((job) => (job.data as Turn).calls[0]!.id !== ticket.data.calls[0]!.id));

    // Ambiguous receipts of both layouts, read by this release with their names. The previous release's CLI
    // shows the layout-4 one without them and cannot resolve it (nothing written); this release's CLI can.
    const ambiguous = await store.listAmbiguous();
    expect(ambiguous.find((r) => r.redisKey === post.redisKey)).toMatchObject({ key: post.key, schema: 4 });
    const verdict = async (record: ReceiptRecord) => verdictOf(await readOutbox(redis, prefix), record);
    const postHash = await redis.hgetall(post.redisKey);
    const shownOld = await oldCli(['show', post.redisKey, '--json']);
    expect(JSON.parse(shownOld.stdout)).toMatchObject({ redisKey: post.redisKey, key: EMPTY_CALL, status: 'running' });
    const lostRecord = ambiguous.find((r) => r.redisKey === post.redisKey)!;
    expect((await oldCli(resolveArgs(lostRecord, await verdict(lostRecord)))).code).not.toBe(0);
    expect(await redis.hgetall(post.redisKey)).toEqual(postHash);
    // As the docs say, every other ambiguous call is resolved with this release before rolling back (the first
    // with its CLI); the frozen post is left for the previous release's workers to meet. The outbox says which landed.
    const others = ambiguous.filter((r) => r.redisKey !== post.redisKey);
    for (const [i, record] of others.entries()) {
      const v = await verdict(record);
      if (i > 0) {
        await store.resolve(record.key, v);
        continue;
      }
      const args = resolveArgs(record, v);
      const ran = await cli(args);
      expect(ran, ran.stderr).toMatchObject({ code: 0 });
    }
    expect((await store.listAmbiguous()).map((r) => r.redisKey)).toEqual([post.redisKey]);
    await settled('resolved');

    // 4. The previous release's workers replace this release's one by one, under load and a SIGKILL after an
    // effect, beside the layout-4 receipts that remain. Then batch c again (they replay layout-4 receipts), and
    // the frozen post's turn (they find its layout-4 receipt ambiguous, as this release does).
    const beforeRollback = new Map((await deploy.listAll(store)).map((r) => [r.redisKey, r]));
    await batch('f', 6);
    await rollTo('previous');
    await batch('g', 6);
    const replays = (await Promise.all(cTurns.map((data) => enqueue(data)))).flat();
    await deploy.killFrozen('previous', 'previous');
    const [metLost] = await enqueue(post.data);
    await drain('every job to finish after the rollback');
    await Promise.all(fleet.map((s) => s.worker.signal('SIGKILL')));
    await settled('rolled back');
    // The calls the rollback's SIGKILLs left ambiguous (layouts 1 and 2), resolved with this release.
    const rolledBackAmbiguous = (await store.listAmbiguous()).filter((r) => r.redisKey !== post.redisKey);
    for (const record of rolledBackAmbiguous) await store.resolve(record.key, await verdict(record));

    // The frozen post: ambiguous to the previous release too; it stays layout 4 without its names, and this
    // release's CLI resolves it from the outbox.
    expect(await metLost!.getState()).toBe('failed');
    expect((await queue.getJob(metLost!.id!))!.failedReason).toMatch(/ambiguous/);
    expect(await keyFieldsOf(post.redisKey)).toEqual([]);
    const stillLost = (await store.inspect(post.key))!;
    expect(stillLost).toMatchObject({ key: post.key, status: 'running', schema: 4 });
    expect(stillLost.ambiguousMs).not.toBeNull();
    const resolved = await cli(resolveArgs(stillLost, await verdict(stillLost)));
    expect(resolved, resolved.stderr).toMatchObject({ code: 0 });
    const settledPost = (await store.inspect(post.key))!;
    expect(settledPost).toMatchObject({ key: post.key, status: 'completed', schema: 4 });
    expect(settledPost.resolvedMs).not.toBeNull();
    await settled('all resolved');

    // At most once, across both layouts, both releases, the switches and the rollback.
    const effects = await readOutbox(redis, prefix);
    expect(duplicateEffects(effects)).toEqual([]);
    expect(new Set(effects.map((e) => (e as { release?: string }).release))).toEqual(new Set(['current', 'current-4', 'previous']));
    const decisions = await redis.hgetall(`${prefix}:deploy:decisions`);
    for (const key of ['current:execute', 'current-4:execute', 'previous:execute', 'current-4:replay', 'current:replay', 'previous:replay'])
      expect(Number(decisions[key] ?? 0), key).toBeGreaterThan(0);

    // Every job completed, or failed as a job with an ambiguous call does.
    const states = await Promise.all(deploy.jobs.map(async (job) => (await queue.getJob(job.id!))!));
    for (const job of states) {
      const state = await job.getState();
      expect(
        state === 'completed' || (state === 'failed' && /ambiguous/.test(job.failedReason)),
        `job ${job.id}: ${state} ${job.failedReason}`,
      ).toBe(true);
    }

    // The previous release's workers replayed every layout-4 call this release had completed, with its result.
    const replayed = await deploy.expectReplayed(replays, beforeRollback, 4);
    expect(replayed).toBeGreaterThan(0);

    // Each receipt kept its layout from one step to the next, whichever worker wrote it after; each batch's
    // receipts have the layouts the workers that could create them write; and layout 4 alone drops the names.
    const heldKeys = new Set((await Promise.all([oldTicket, post, ticket].map((held) => deploy.receiptKeys(held.data)))).flat());
    const final = expectKept({ steps: STEP_LAYOUTS, batches: BATCH_LAYOUTS, held: heldKeys });
    expect(new Set(final.values())).toEqual(new Set(['1', '2', '4']));
    for (const [key, layout] of final) expect(await keyFieldsOf(key), key).toHaveLength(layout === '4' ? 0 : KEY_FIELDS.length);

    // This release reads every layout with its names: its store lists every receipt SCAN found, under the key
    // it names, and its CLI shows and lists the same records.
    const current = await deploy.listAll(store);
    expect(current.map((r) => r.redisKey).sort()).toEqual([...final.keys()].sort());
    for (const r of current) expect(store.redisKey(r.key)).toBe(r.redisKey);
    for (const layout of ['1', '2', '4']) {
      const one = current.find((r) => final.get(r.redisKey) === layout && r.status === 'completed')!;
      const shown = await cli(['show', one.redisKey, '--json']);
      expect(core(JSON.parse(shown.stdout)), `layout ${layout}`).toEqual(core(one));
    }
    const layoutsIn = (run: string) => new Set(current.filter((r) => r.key.runId === run).map((r) => final.get(r.redisKey))).size;
    const mixedRun = [...new Set(current.map((r) => r.key.runId))].sort((x, y) => layoutsIn(y) - layoutsIn(x))[0]!;
    const listed = await cli(['run', 'acme', mixedRun, '--json']);
    expect((JSON.parse(listed.stdout) as { receipts: object[] }).receipts.map(core)).toEqual(
      current.filter((r) => r.key.runId === mixedRun).map(core),
    );

    // The previous release reads the same receipts, but a layout-4 one as an empty call; both count every one.
    const previous = await deploy.listAll(oldStore);
    const asPrevious = (r: ReceiptRecord) => core(final.get(r.redisKey) === '4' ? { ...r, key: EMPTY_CALL } : r);
    expect(previous.map(core).sort(byKey)).toEqual(current.map(asPrevious).sort(byKey));
    const byStatus: Record<string, number> = { running: 0, completed: 0, failed: 0 };
    for (const r of current) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
    for (const reader of [store, oldStore]) expect(await reader.stats()).toMatchObject({ total: current.length, byStatus, ambiguous: 0 });

    const byLayout = (n: string) => [...final.values()].filter((l) => l === n).length;
    console.log(
      `rolling deploy with layout 4 (previous release from ${release.from}): ${deploy.enqueued} jobs, ${deploy.kills} workers ` +
        `SIGKILLed, ${effects.length} effects, ${duplicateEffects(effects).length} duplicate; ${final.size} receipts ` +
        `(${byLayout('1')} layout 1, ${byLayout('2')} layout 2, ${byLayout('4')} layout 4); ${ambiguous.length} ambiguous ` +
        `resolved before the rollback, ${rolledBackAmbiguous.length} after; ${replayed} layout-4 replays by the previous release; decisions ${JSON.stringify(decisions)}`,
    );
  } finally {
    await deploy.close();
  }
}, 170_000);

const byKey = (x: { redisKey: string }, y: { redisKey: string }) => (x.redisKey < y.redisKey ? -1 : x.redisKey > y.redisKey ? 1 : 0);
