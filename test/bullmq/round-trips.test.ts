/**
 * Commands the wrapper sends on its own connection per call: the claim script
 * also reads the breaker, and the complete script also ends the rejection
 * streak, so an executed call costs two commands and a replay one. In a turn
 * of calls run one after another, each complete also claims the next call,
 * so k executed calls cost k + 1 commands. A limited call adds its reserve
 * and its commit, its bind going behind its claim; a capped call its slot
 * taken and freed.
 */
import { Worker } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { REJECTION_REMOVAL_SUFFIX } from '../../src/core/index.js';
import { defineTool, withToolReceipts, type ToolJobResult } from '../../src/bullmq/index.js';
import { defineLimit, LimitStore } from '../../src/limits/index.js';
import { recordCommands as record } from '../support/sent-commands.js';
import { YEAR_MS } from '../support/limit-windows.js';
import { call, jobData, silent, useLanes } from './fixture.js';

const lane = useLanes();
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

type Lane = Awaited<ReturnType<ReturnType<typeof useLanes>>>;

type WrapperOptions = Parameters<typeof withToolReceipts>[0];

/** A Worker whose wrapper sends its commands on a connection of its own, so they can be recorded. */
function wrappedWorker(l: Lane, tools: WrapperOptions['tools'], limits?: WrapperOptions['limits']) {
  const connection = l.redis.duplicate();
  closers.push(async () => connection.disconnect());
  const processor = withToolReceipts({ logger: silent, tools, redis: connection, prefix: l.prefix, ...(limits ? { limits } : {}) });
  const worker = new Worker(l.queueName, processor, { connection: l.redis.duplicate(), prefix: l.prefix });
  worker.on('error', () => undefined);
  closers.push(() => worker.close(true));
  return { connection, processor, worker };
}

/** An opaque send_email tool that counts its runs. */
function countingSend() {
  const counter = { runs: 0 };
  const tool = defineTool({
    name: 'send_email',
    input: z.object({ to: z.string() }),
    effect: 'opaque',
    destructive: false,
    execute: ({ to }) => `sent ${++counter.runs} to ${to}`,
  });
  return { tool, counter };
}

describe('commands per call on the wrapper connection', () => {
  it('executed: claim and complete; replayed: claim; removed: claim, and no receipt', async () => {
    const l = await lane();
    const { tool: send, counter } = countingSend();
    const { connection, processor, worker } = wrappedWorker(l, [send]);
    processor.attach(worker);
    const decisions: string[] = [];
    processor.events.on('decision', (e) => decisions.push(e.decision));
    const outcome = async (data: ReturnType<typeof jobData>) => ((await l.run(data)).returnvalue as ToolJobResult).results[0]!;

    const ids = { runId: 'run-round-trips' };
    // Warm-up, so the scripts are in the server's cache and no NOSCRIPT fallback is counted.
    expect((await outcome(jobData([call('send_email', { to: 'warm@x.test' })], ids))).outcome).toBe('executed');
    await processor.breaker.recordRejection('acme', ids.runId, 'send_email');

    const sent = record(connection);
    const executed = jobData([call('send_email', { to: 'a@x.test' })], ids);
    expect((await outcome(executed)).outcome).toBe('executed');
    expect(sent.take()).toEqual(['claim', 'complete']);
    // The complete script ended the rejection streak.
    expect(await processor.breaker.state('acme', ids.runId, 'send_email')).toEqual({ removal: null, rejections: 0 });
    sent.take();

    expect((await outcome(jobData(executed.calls, ids))).outcome).toBe('replayed');
    expect(sent.take()).toEqual(['claim']);

    await processor.breaker.recordFailure('acme', ids.runId, 'send_email', { removeNow: true, reason: 'send_email was removed.' });
    sent.take();
    const removed = await outcome(jobData([call('send_email', { to: 'b@x.test' })], ids));
    expect(removed).toMatchObject({ outcome: 'rejected', is_error: true, content: `send_email was removed. ${REJECTION_REMOVAL_SUFFIX}` });
    expect(sent.take()).toEqual(['claim']);
    // A completed call of the removed tool still replays.
    expect((await outcome(jobData(executed.calls, ids))).outcome).toBe('replayed');
    expect(sent.take()).toEqual(['claim']);

    const receipts = await processor.store.listRun('acme', ids.runId);
    expect(receipts.map((r) => r.status)).toEqual(['completed', 'completed']);
    expect(counter.runs).toBe(2);
    // The removed tool's call was refused without a claim, so it made no decision.
    expect(decisions).toEqual(['execute', 'execute', 'replay', 'replay']);
  });

  it('a turn of three executed calls: four commands, each complete claiming the next call (its replay: three claims), or side by side one claim for all three', async () => {
    const l = await lane();
    const { tool: send, counter } = countingSend();
    const { connection } = wrappedWorker(l, [send]);
    const outcomes = async (data: ReturnType<typeof jobData>) =>
      ((await l.run(data)).returnvalue as ToolJobResult).results.map((r) => [r.outcome, r.content]);
    // Warm-up, so every script is in the server's cache and no NOSCRIPT fallback is counted, and the run is
    // registered (a first claim of a run sends that ZADD ahead of itself, in the same write).
    const ids = { runId: 'run-three-calls' };
    await outcomes(jobData([call('send_email', { to: 'w1@x.test' }), call('send_email', { to: 'w2@x.test' })], ids));
    counter.runs = 0;

    const sent = record(connection);
    const turn = jobData(
      ['a', 'b', 'c'].map((to) => call('send_email', { to: `${to}@x.test` })),
      ids,
    );
    expect(await outcomes(turn)).toEqual([
      ['executed', 'sent 1 to a@x.test'],
      ['executed', 'sent 2 to b@x.test'],
      ['executed', 'sent 3 to c@x.test'],
    ]);
    expect(sent.take()).toEqual(['claim', 'complete-claim', 'complete-claim', 'complete']);
    expect(await outcomes(jobData(turn.calls, turn))).toEqual([
      ['replayed', 'sent 1 to a@x.test'],
      ['replayed', 'sent 2 to b@x.test'],
      ['replayed', 'sent 3 to c@x.test'],
    ]);
    expect(sent.take()).toEqual(['claim', 'claim', 'claim']);
    expect(counter.runs).toBe(3);

    // Side by side: one script claims the three calls, then each completes; completes that meet in
    // a tick go as one group commit batch.
    const parallel = {
      ...jobData(
        ['d', 'e', 'f'].map((to) => call('send_email', { to: `${to}@x.test` })),
        ids,
      ),
      parallel: true,
    };
    expect((await outcomes(parallel)).map(([outcome]) => outcome)).toEqual(['executed', 'executed', 'executed']);
    const sideBySide = sent.take();
    expect(sideBySide[0]).toBe('claim-group');
    expect(sideBySide.slice(1).flatMap((name) => /^commit-batch\((.*)\)$/.exec(name)?.[1]?.split(',') ?? [name])).toEqual([
      'complete',
      'complete',
      'complete',
    ]);
    expect(sideBySide.length).toBeLessThanOrEqual(4);
    expect(counter.runs).toBe(6);
  });

  it('a limited call: its reserve, its claim with the bind right behind it (sent before the claim is answered), its commit and complete; a capped call: its slot, claim, complete and the slot freed, the receipt not read again', async () => {
    const l = await lane();
    const { tool: send, counter } = countingSend();
    const limited = wrappedWorker(l, [send], [{ name: 'emails', per: 'tenant', max: 10, windowMs: YEAR_MS }]);
    const ids = { runId: 'run-limited-round-trips' };
    const outcome = async (data: ReturnType<typeof jobData>) => ((await l.run(data)).returnvalue as ToolJobResult).results[0]!;
    // Warm-up: the scripts in the server's cache, the run registered, the count listed in the limits' index.
    expect((await outcome(jobData([call('send_email', { to: 'warm@x.test' })], ids))).outcome).toBe('executed');

    const sent = record(limited.connection, { replies: true });
    expect((await outcome(jobData([call('send_email', { to: 'a@x.test' })], ids))).outcome).toBe('executed');
    const events = sent.take();
    expect(events.filter((e) => !e.startsWith('<-'))).toEqual(['limit-reserve', 'claim', 'limit-bind', 'limit-commit', 'complete']);
    expect(events.indexOf('claim')).toBeGreaterThan(events.indexOf('<-limit-reserve'));
    expect(events.indexOf('limit-bind')).toBeLessThan(events.indexOf('<-claim'));
    const receipts = await limited.processor.store.listRun('acme', ids.runId);
    expect(receipts.map((r) => r.status)).toEqual(['completed', 'completed']);
    expect(counter.runs).toBe(2);
    // Each execution bound its share: the window holds the two, none of them pending.
    const limits = new LimitStore({ redis: l.redis, prefix: l.prefix });
    const emails = defineLimit({ name: 'emails', per: 'tenant', max: 10, windowMs: YEAR_MS });
    expect(await limits.usage(emails, { tenantId: 'acme' })).toMatchObject({ used: 2, pending: 0 });
    for (const receipt of receipts) expect((await limits.boundOn(receipt.redisKey, ['emails'])).bound).toEqual(new Set(['emails']));

    await limited.worker.close();
    const capped = wrappedWorker(l, [send], [{ name: 'sending', per: 'tenant', concurrency: 2 }]);
    await capped.connection.ping();
    const capIds = { runId: 'run-capped-round-trips' };
    expect((await outcome(jobData([call('send_email', { to: 'warm@x.test' })], capIds))).outcome).toBe('executed');
    const capSent = record(capped.connection);
    expect((await outcome(jobData([call('send_email', { to: 'b@x.test' })], capIds))).outcome).toBe('executed');
    expect(capSent.take()).toEqual(['limit-slot-acquire', 'claim', 'complete', 'limit-slot-release']);
    expect((await limits.caps.usage({ name: 'sending', per: 'tenant' }, { tenantId: 'acme' })).held).toBe(0);
  });

  it('read-only: no command at all, and the call runs again every time', async () => {
    const l = await lane();
    let runs = 0;
    const lookup = defineTool({
      name: 'lookup',
      input: z.object({ q: z.string() }),
      effect: 'opaque',
      readOnly: true,
      execute: ({ q }) => `${q} #${++runs}`,
    });
    const { connection } = wrappedWorker(l, [lookup]);
    await connection.ping(); // connected before counting
    const sent = record(connection);
    const data = jobData([call('lookup', { q: 'a' })]);
    for (const expected of ['a #1', 'a #2']) {
      expect(((await l.run(data)).returnvalue as ToolJobResult).results[0]).toMatchObject({ outcome: 'executed', content: expected });
    }
    expect(sent.take()).toEqual([]);
  });
});
