/**
 * Limits through the real wrapper and real BullMQ workers: a call over its
 * limit is refused with a sentence (the job completes) or waits on the
 * server clock without using an attempt; replays, waits for a live attempt
 * and refusals do not count; a never-started attempt gives its share back; an ambiguous one
 * keeps it (for each kind of window: a bucket gets back a share of an attempt
 * that never started because the wrapper commits it only when the attempt ends); a takeover
 * another limit refuses after its claim gives the rest back; a takeover of a resumable call is counted once; budgets stop the
 * call that would exceed them and none before; a reservation no claim took
 * is given back after its bound; bad definitions are `options.invalid`.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { NeverStartedError, OutcomeUnknownError, toolCallArgsHash } from '../../src/core/index.js';
import { defineTool, withToolReceipts, type ToolJobResult } from '../../src/bullmq/index.js';
import { defineLimit, LimitStore, type LimitDefinition } from '../../src/limits/index.js';
import { call, jobData, RETRYING, silent, useLanes } from '../bullmq/fixture.js';
import { clearOfWindowEnd, YEAR_MS } from '../support/limit-windows.js';
import { waitForLeaseExpiry } from '../support/redis-fixture.js';

const lane = useLanes();
/** An hour's window: a test that reads it in a refusal sentence (`every 1 h`) first waits for one with WINDOW_LEFT_MS left. */
const HOUR = 3_600_000;
/** How long that window must still run when such a test starts: its jobs, one call after another, run in it. */
const WINDOW_LEFT_MS = 20_000;

/** A tool that counts its effects per recipient; `fail` decides, per attempt, what it throws first. */
function emailTool(options: { effect?: 'opaque' | 'resumable'; fail?: (to: string, attempt: number) => Error | undefined } = {}) {
  const effects: string[] = [];
  const tool = defineTool({
    name: 'send_email',
    input: z.object({ to: z.string(), cents: z.number().optional() }),
    effect: options.effect ?? 'opaque',
    destructive: false,
    async execute(args, ctx) {
      const error = options.fail?.(args.to, ctx.attempt);
      if (error) throw error;
      effects.push(args.to);
      return `sent to ${args.to}`;
    },
  });
  return { tool, effects };
}

const outcomes = (job: { returnvalue: unknown }) => (job.returnvalue as ToolJobResult).results.map((r) => r.outcome);
const contents = (job: { returnvalue: unknown }) => (job.returnvalue as ToolJobResult).results.map((r) => r.content);

describe('withToolReceipts({ limits })', () => {
  it('refuses the calls over a tenant limit with a sentence naming it and its reset, and completes the job', async () => {
    const l = await lane();
    const t = emailTool();
    const emails = defineLimit({ name: 'emails', per: 'tenant', max: 3, windowMs: HOUR, tools: ['send_email'] });
    l.worker({ tools: [t.tool], logger: silent, limits: [emails] });
    const calls = ['a', 'b', 'c', 'd', 'e'].map((to) => call('send_email', { to }));
    await clearOfWindowEnd(new LimitStore({ redis: l.redis, prefix: l.prefix }), emails, { tenantId: 'acme-refuse' }, WINDOW_LEFT_MS);
    const job = await l.run(jobData(calls, { tenantId: 'acme-refuse' }));
    expect(job.failedReason).toBeUndefined();
    expect(outcomes(job)).toEqual(['executed', 'executed', 'executed', 'rejected', 'rejected']);
    expect(contents(job)[3]).toMatch(
      /^This call was not run: the limit "emails" \(at most 3 per tenant every 1 h\) is used up until it resets at \d{4}-/,
    );
    expect(t.effects).toEqual(['a', 'b', 'c']);
    const store = new LimitStore({ redis: l.redis, prefix: l.prefix });
    expect(await store.usage(emails, { tenantId: 'acme-refuse' })).toMatchObject({ committed: 3, pending: 0, left: 0 });
    // Another tenant has its own count.
    const other = await l.run(jobData([call('send_email', { to: 'f' })], { tenantId: 'other' }));
    expect(outcomes(other)).toEqual(['executed']);
  });

  it('settles as never started an attempt whose bind failed after its claim: the tool never ran, and nothing is left to read as ambiguous', async () => {
    const l = await lane();
    const t = emailTool();
    const emails = defineLimit({ name: 'emails', per: 'tenant', max: 3, windowMs: HOUR, tools: ['send_email'] });
    const { processor } = l.worker({ tools: [t.tool], logger: silent, limits: [emails] });
    const ids = { tenantId: 'acme-bind', runId: 'run-bind' };
    // The run's bindings hash is not a hash: the bind sent with the claim fails (TRC_CORRUPT) after the claim started an attempt.
    await l.redis.set(`${l.prefix}:lbd:{acme-bind|run-bind}`, 'not a hash');
    const job = await l.run(jobData([call('send_email', { to: 'a' })], ids));
    expect(job.failedReason).toBeTruthy();
    expect(t.effects).toEqual([]);
    const [receipt] = await processor.store.listRun(ids.tenantId, ids.runId);
    expect(receipt).toMatchObject({ status: 'failed', tier: 'neverStarted' });
    expect(receipt!.error).toMatch(/its limits could not be checked after its claim/);
  });

  it('replays a recorded call over its limit, and counts neither the replay nor the refusal', async () => {
    const l = await lane();
    const t = emailTool();
    const once = defineLimit({ name: 'once', per: 'run', max: 1, windowMs: YEAR_MS });
    l.worker({ tools: [t.tool], logger: silent, limits: [once] });
    const data = jobData([call('send_email', { to: 'a' }, 'toolu_a'), call('send_email', { to: 'b' }, 'toolu_b')]);
    const first = await l.run(data);
    const again = await l.run(data);
    expect(outcomes(first)).toEqual(['executed', 'rejected']);
    expect(outcomes(again)).toEqual(['replayed', 'rejected']);
    expect(t.effects).toEqual(['a']);
    const store = new LimitStore({ redis: l.redis, prefix: l.prefix });
    expect(await store.usage(once, data)).toMatchObject({ committed: 1, pending: 0 });
  });

  it('lets a second delivery wait for the live attempt and then replay, over the limit and uncounted', async () => {
    const l = await lane();
    let open = () => {};
    const gate = new Promise<void>((r) => (open = r));
    let entered = () => {};
    const started = new Promise<void>((r) => (entered = r));
    const effects: string[] = [];
    const slow = defineTool({
      name: 'send_email',
      input: z.object({ to: z.string() }),
      effect: 'opaque',
      destructive: false,
      async execute({ to }) {
        entered();
        await gate;
        effects.push(to);
        return `sent to ${to}`;
      },
    });
    const once = defineLimit({ name: 'once', per: 'run', max: 1, windowMs: YEAR_MS });
    const { processor } = l.worker({ tools: [slow], logger: silent, limits: [once], waitJitterMs: 10, maxWaitMs: 100 }, { concurrency: 2 });
    const decisions: string[] = [];
    processor.events.on('decision', (e) => decisions.push(e.decision));
    const data = jobData([call('send_email', { to: 'a' }, 'toolu_a')]);
    const first = await l.add(data);
    await started;
    const second = await l.add(data);
    await expect.poll(() => decisions.includes('wait'), { timeout: 10_000 }).toBe(true);
    open();
    const [a, b] = await Promise.all([l.settle(first), l.settle(second)]);
    expect([outcomes(a), outcomes(b)]).toEqual([['executed'], ['replayed']]);
    expect(effects).toEqual(['a']);
    expect(await new LimitStore({ redis: l.redis, prefix: l.prefix }).usage(once, data)).toMatchObject({ committed: 1, pending: 0 });
  });

  it("parks a call over a 'wait' limit on the server clock until the window resets, without using an attempt", async () => {
    const l = await lane();
    const t = emailTool();
    const windowMs = 1500;
    const burst = defineLimit({ name: 'burst', per: 'tenant', max: 1, windowMs, onLimit: 'wait' });
    l.worker({ tools: [t.tool], logger: silent, limits: [burst], waitJitterMs: 0 });
    const tenantId = 'acme-wait';
    // Start early in a window on the server clock, so both calls meet the same one and the second must wait.
    await clearOfWindowEnd(new LimitStore({ redis: l.redis, prefix: l.prefix }), burst, { tenantId }, (windowMs * 2) / 3);
    const job = await l.run(jobData([call('send_email', { to: 'a' }), call('send_email', { to: 'b' })], { tenantId }), { attempts: 1 });
    expect(job.failedReason).toBeUndefined();
    // The job came back after the reset and ran its turn again: the first call replayed.
    expect(outcomes(job)).toEqual(['replayed', 'executed']);
    expect(job.attemptsMade).toBe(1);
    expect(t.effects).toEqual(['a', 'b']);
    // The second ran in a later window: each window counted one.
    const usage = await new LimitStore({ redis: l.redis, prefix: l.prefix }).usage(burst, { tenantId });
    expect(usage.committed).toBeLessThanOrEqual(1);
  });

  // A sliding window's and a bucket's share is committed when the attempt ends: a never-started one gives back a share
  // still pending (a bucket would keep a committed one), and an ambiguous one commits it.
  const kinds = [{ kind: 'fixed' as const }, { kind: 'sliding' as const }, { kind: 'bucket' as const, burst: 1 }];

  it.each(kinds)('gives back the share of an attempt that never started, so its retry fits a limit of 1 ($kind)', async (window) => {
    const l = await lane();
    const t = emailTool({ fail: (_to, attempt) => (attempt === 1 ? new NeverStartedError('the provider was down') : undefined) });
    const once = defineLimit({ name: 'once', per: 'run', max: 1, windowMs: YEAR_MS, ...window });
    l.worker({ tools: [t.tool], logger: silent, limits: [once] });
    const data = jobData([call('send_email', { to: 'a' })]);
    const job = await l.run(data, RETRYING);
    expect(outcomes(job)).toEqual(['executed']);
    expect(t.effects).toEqual(['a']);
    expect(await new LimitStore({ redis: l.redis, prefix: l.prefix }).usage(once, data)).toMatchObject({ committed: 1, pending: 0 });
  });

  it.each(kinds)('keeps the share of an ambiguous call (it may have cost) ($kind)', async (window) => {
    const l = await lane();
    const t = emailTool({ fail: () => new OutcomeUnknownError('the connection dropped mid-send') });
    const once = defineLimit({ name: 'once', per: 'run', max: 1, windowMs: YEAR_MS, ...window });
    l.worker({ tools: [t.tool], logger: silent, limits: [once], onAmbiguous: 'report' });
    const data = jobData([call('send_email', { to: 'a' }), call('send_email', { to: 'b' })]);
    const job = await l.run(data);
    expect(outcomes(job)).toEqual(['ambiguous', 'rejected']);
    expect(await new LimitStore({ redis: l.redis, prefix: l.prefix }).usage(once, data)).toMatchObject({ committed: 1, pending: 0 });
  });

  it('gives back the other shares of a takeover a limit refuses after its claim, once it is settled as never started', async () => {
    const l = await lane();
    const t = emailTool({ effect: 'resumable' });
    const spare = defineLimit({ name: 'spare', per: 'tenant', max: 5, windowMs: YEAR_MS, kind: 'sliding' });
    const sends = defineLimit({ name: 'sends', per: 'tenant', max: 1, windowMs: YEAR_MS });
    l.worker({ tools: [t.tool], logger: silent, limits: [spare, sends] });
    const data = jobData([call('send_email', { to: 'a' })], { tenantId: 'acme-after' });
    // Attempt 1 was claimed by a worker that counted no limit, and died: its lease lapses, bound to no share.
    const key = { tenantId: data.tenantId, runId: data.runId, toolName: 'send_email', argsHash: await toolCallArgsHash({ to: 'a' }) };
    await l.store.claim(key, { effect: 'resumable', leaseMs: 300 });
    expect(outcomes(await l.run(jobData([call('send_email', { to: 'b' })], { tenantId: 'acme-after' })))).toEqual(['executed']);
    await waitForLeaseExpiry(l.store, key);

    // The takeover passes the gate (its receipt is running), and sends, used up, refuses it after its claim.
    const job = await l.run(data);
    expect(outcomes(job)).toEqual(['rejected']);
    expect(t.effects).toEqual(['b']);
    expect(await l.receipt(data.tenantId, data.runId)).toMatchObject({ status: 'failed', tier: 'neverStarted', attempts: 2 });
    // Its spare share went back: only b's counts.
    expect(await new LimitStore({ redis: l.redis, prefix: l.prefix }).usage(spare, data)).toMatchObject({ used: 1, pending: 0 });
  });

  it('counts a takeover of a resumable call as the same execution', async () => {
    const l = await lane();
    const t = emailTool({
      effect: 'resumable',
      fail: (_to, attempt) => (attempt === 1 ? new OutcomeUnknownError('cut off after its first step') : undefined),
    });
    const once = defineLimit({ name: 'once', per: 'run', max: 1, windowMs: YEAR_MS });
    l.worker({ tools: [t.tool], logger: silent, limits: [once] });
    const data = jobData([call('send_email', { to: 'a' })]);
    const job = await l.run(data, RETRYING);
    expect(outcomes(job)).toEqual(['executed']);
    expect((await l.receipt(data.tenantId, data.runId)).attempts).toBe(2);
    expect(await new LimitStore({ redis: l.redis, prefix: l.prefix }).usage(once, data)).toMatchObject({ committed: 1, pending: 0 });
  });

  it('stops, in a budget, the call that would exceed the cap and none before it', async () => {
    const l = await lane();
    const t = emailTool();
    const spend = defineLimit<{ cents?: number }>({ name: 'spend', per: 'tenant', max: 10, windowMs: HOUR, cost: (a) => a.cents ?? 0 });
    const free = defineTool({ ...t.tool, name: 'draft_email', limits: [] });
    l.worker({ tools: [t.tool, free], logger: silent, limits: [spend] });
    const cents = [3, 4, 3, 1, 0];
    const tenantId = 'acme-budget';
    await clearOfWindowEnd(new LimitStore({ redis: l.redis, prefix: l.prefix }), spend, { tenantId }, WINDOW_LEFT_MS);
    const job = await l.run(
      jobData(
        cents.map((c, i) => call('send_email', { to: `r${i}`, cents: c })),
        { tenantId },
      ),
    );
    // 3 + 4 + 3 = 10 is the cap: the fourth would exceed it; a call costing 0 is not limited.
    expect(outcomes(job)).toEqual(['executed', 'executed', 'executed', 'rejected', 'executed']);
    const store = new LimitStore({ redis: l.redis, prefix: l.prefix });
    expect(await store.usage(spend, { tenantId })).toMatchObject({ committed: 10, left: 0 });
    const over = await l.run(jobData([call('send_email', { to: 'x', cents: 11 })], { tenantId: 'acme-budget-2' }));
    expect(contents(over)[0]).toMatch(
      /it would use 11 of the limit "spend", which allows at most 10 per tenant every 1 h, so it can never fit/,
    );
  });

  it('gives back a reservation that no claim took after its bound, reservationMs', async () => {
    const l = await lane();
    const t = emailTool();
    const reservationMs = 800;
    const limit: LimitDefinition = { name: 'emails', per: 'tenant', max: 1, windowMs: YEAR_MS };
    l.worker({ tools: [t.tool], logger: silent, limits: [limit], limitReservationMs: reservationMs });
    // A worker that reserved and died before its claim.
    const store = new LimitStore({ redis: l.redis, prefix: l.prefix, reservationMs });
    const tenantId = 'acme-dead';
    const dead = await store.reserve(defineLimit(limit), { tenantId, runId: 'run-dead', toolName: 'send_email', argsHash: 'h' });
    expect(dead.granted).toBe(true);
    const refused = await l.run(jobData([call('send_email', { to: 'a' })], { tenantId }));
    expect(outcomes(refused)).toEqual(['rejected']);
    await new Promise((r) => setTimeout(r, reservationMs + 200));
    const after = await l.run(jobData([call('send_email', { to: 'b' })], { tenantId }));
    expect(outcomes(after)).toEqual(['executed']);
    expect(await store.usage(defineLimit(limit), { tenantId })).toMatchObject({ committed: 1, pending: 0 });
  });

  it('refuses bad limit definitions when the processor is made, naming the field', async () => {
    const l = await lane();
    const t = emailTool();
    const make = (extra: object) => () => withToolReceipts({ redis: l.redis, prefix: l.prefix, tools: [t.tool], logger: silent, ...extra });
    const refusal = (extra: object) => {
      try {
        make(extra)();
      } catch (error) {
        return { code: (error as { code?: string }).code, option: (error as { option?: string }).option };
      }
      return undefined;
    };
    const base = { name: 'x', per: 'tenant', max: 5, windowMs: 1000 };
    expect(refusal({ limits: [{ ...base, max: -1 }] })).toEqual({ code: 'options.invalid', option: 'limits[0].max' });
    expect(refusal({ limits: [base, { ...base, name: 'y', max: Number.NaN }] })).toEqual({
      code: 'options.invalid',
      option: 'limits[1].max',
    });
    expect(refusal({ limits: [{ ...base, windowMs: 0 }] })).toEqual({ code: 'options.invalid', option: 'limits[0].windowMs' });
    expect(refusal({ limits: [{ ...base, per: 'team' }] })).toEqual({ code: 'options.invalid', option: 'limits[0].per' });
    const own = (limits: unknown[]) => ({ tools: [defineTool({ ...t.tool, limits: limits as LimitDefinition[] })] });
    expect(refusal(own([{ ...base, windowMs: 0 }]))).toEqual({ code: 'options.invalid', option: 'tools[0].limits[0].windowMs' });
    expect(refusal(own([{ ...base, tools: ['send_email'] }]))).toEqual({ code: 'options.invalid', option: 'tools[0].limits[0].tools' });
    expect(refusal({ limits: [base], ...own([base]) })).toEqual({ code: 'options.invalid', option: 'tools[0].limits[0].name' });
    expect(refusal({ limits: [base], ...own([{ ...base, name: 'z' }]) })).toBeUndefined();
  });
});
