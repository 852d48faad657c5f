import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { z } from 'zod';
import { NeverStartedError, toolCallArgsHash } from '../../src/core/index.js';
import { defineTool, type ToolJobResult } from '../../src/bullmq/index.js';
import { call, jobData, useLanes } from './fixture.js';

const lane = useLanes();

/** A tool whose effect is counted per argument bag, optionally held until released. */
function countingTool(name = 'send_email', effect: 'opaque' | 'resumable' = 'opaque') {
  const effects = new Map<string, number>();
  let gate: Promise<void> = Promise.resolve();
  let open = () => {};
  let entered = () => {};
  let enteredOnce = new Promise<void>((r) => (entered = r));
  const tool = defineTool({
    name,
    input: z.object({ to: z.string() }),
    effect,
    destructive: false,
    async execute(args) {
      entered();
      await gate;
      effects.set(args.to, (effects.get(args.to) ?? 0) + 1);
      return `sent to ${args.to}`;
    },
  });
  return {
    tool,
    effects,
    hold() {
      gate = new Promise<void>((r) => (open = r));
      enteredOnce = new Promise<void>((r) => (entered = r));
    },
    release: () => open(),
    entered: () => enteredOnce,
  };
}

describe('withToolReceipts', () => {
  it('runs each effect once when the same calls arrive as two jobs on two workers', async () => {
    const l = await lane();
    const t = countingTool();
    l.worker({ tools: [t.tool] }, { concurrency: 4 });
    l.worker({ tools: [t.tool] }, { concurrency: 4 });
    const calls = ['a@x.test', 'b@x.test', 'c@x.test'].map((to, i) => call('send_email', { to }, `toolu_${i}`));
    const data = jobData(calls);
    const jobs = await Promise.all([l.add(data), l.add(data)]);
    const done = await Promise.all(jobs.map((j) => l.settle(j)));
    expect(done.map((j) => j.finishedOn && !j.failedReason)).toEqual([true, true]);
    expect([...t.effects.values()]).toEqual([1, 1, 1]);
    const [r1, r2] = done.map((j) => j.returnvalue as ToolJobResult);
    const strip = (r: ToolJobResult) => r.results.map(({ outcome: _o, ...rest }) => rest);
    expect(strip(r1!)).toEqual(strip(r2!));
    const outcomes = [...r1!.results, ...r2!.results].map((r) => r.outcome).sort();
    expect(outcomes.filter((o) => o === 'executed')).toHaveLength(3);
    expect(outcomes.filter((o) => o === 'replayed')).toHaveLength(3);
  });

  it('delays a second delivery while a live attempt holds the lease, then replays', async () => {
    const l = await lane();
    const t = countingTool();
    t.hold();
    const { processor } = l.worker({ tools: [t.tool], leaseMs: 400, waitJitterMs: 20 }, { concurrency: 2 });
    const decisions: string[] = [];
    processor.events.on('decision', (e) => decisions.push(e.decision));
    const data = jobData([call('send_email', { to: 'w@x.test' }, 'toolu_w')]);
    const first = await l.add(data);
    await t.entered();
    const second = await l.add(data);
    // Observable state: the second job is parked in the delayed set by the wait decision.
    await expect
      .poll(async () => (await second.getState?.()) ?? (await l.queue.getJob(second.id!))?.getState(), {
        timeout: 10_000,
      })
      .toBe('delayed');
    expect(decisions).toEqual(['execute', 'wait']);
    t.release();
    const [a, b] = [await l.settle(first), await l.settle(second)];
    expect((a.returnvalue as ToolJobResult).results[0]!.outcome).toBe('executed');
    expect((b.returnvalue as ToolJobResult).results[0]!.outcome).toBe('replayed');
    expect((b.returnvalue as ToolJobResult).results[0]!.content).toBe('sent to w@x.test');
    expect(t.effects.get('w@x.test')).toBe(1);
    expect(b.attemptsMade).toBe(1); // only its final, replaying run counts: waiting used up no attempt
  });

  it("answers with the current call id when replaying another turn's identical call", async () => {
    const l = await lane();
    const t = countingTool();
    l.worker({ tools: [t.tool] });
    const ids = { runId: 'run-replay-ids' };
    await l.run(jobData([call('send_email', { to: 'r@x.test' }, 'toolu_first')], ids));
    const again = await l.run(jobData([call('send_email', { to: 'r@x.test' }, 'toolu_retried_turn')], ids));
    const [result] = (again.returnvalue as ToolJobResult).results;
    expect(result).toMatchObject({ tool_use_id: 'toolu_retried_turn', outcome: 'replayed', content: 'sent to r@x.test' });
    expect(t.effects.get('r@x.test')).toBe(1);
  });

  it('keeps receipts apart per run and per tenant', async () => {
    const l = await lane();
    const t = countingTool();
    l.worker({ tools: [t.tool] });
    const c = () => [call('send_email', { to: 'same@x.test' })];
    await l.run(jobData(c(), { tenantId: 'a', runId: 'r1' }));
    await l.run(jobData(c(), { tenantId: 'a', runId: 'r2' }));
    await l.run(jobData(c(), { tenantId: 'b', runId: 'r1' }));
    expect(t.effects.get('same@x.test')).toBe(3);
  });

  it('rejects an unknown tool without claiming anything', async () => {
    const l = await lane();
    const t = countingTool();
    l.worker({ tools: [t.tool] });
    const job = await l.run(jobData([call('send_fax', { to: 'x' })]));
    const [r] = (job.returnvalue as ToolJobResult).results;
    expect(r).toMatchObject({ outcome: 'rejected', is_error: true });
    expect(r!.content).toContain('Unknown tool "send_fax"');
    expect(await l.redis.keys(`${l.prefix}:rcpt:*`)).toEqual([]);
  });

  it("refuses a call whose arguments nest past the canonical depth, alone: the turn's other call runs", async () => {
    const l = await lane();
    const t = countingTool();
    const store = defineTool({
      name: 'store_doc',
      input: z.object({ doc: z.any() }),
      effect: 'opaque',
      destructive: false,
      execute: () => 'stored',
    });
    l.worker({ tools: [t.tool, store] });
    let doc: unknown = 'leaf';
    for (let depth = 0; depth < 600; depth++) doc = { a: doc };
    const job = await l.run(jobData([call('store_doc', { doc }), call('send_email', { to: 'ops' })]), { attempts: 2 });
    expect(job.failedReason).toBeFalsy();
    const [refused, sent] = (job.returnvalue as ToolJobResult).results;
    expect(refused).toMatchObject({ outcome: 'rejected', is_error: true });
    expect(refused!.content).toMatch(/^Invalid input for store_doc: .*Nothing was run/);
    expect(sent).toMatchObject({ outcome: 'executed' });
    expect(t.effects.get('ops')).toBe(1);
  });

  it('fails bad job data unrecoverably with the zod issues and writes nothing', async () => {
    const l = await lane();
    const t = countingTool();
    l.worker({ tools: [t.tool] });
    const job = await l.run({ tenantId: '', calls: [] }, { attempts: 3 });
    expect(job.failedReason).toMatch(/^job\.invalid_data: /);
    expect(job.failedReason).toContain('tenantId');
    expect(job.failedReason).toContain('runId');
    expect(job.attemptsMade).toBe(1); // unrecoverable: no retry
    expect(await l.redis.keys(`${l.prefix}:rcpt:*`)).toEqual([]);
    expect(await l.redis.keys(`${l.prefix}:brk:*`)).toEqual([]);
  });

  it('gives the tool a stable idempotency key and its attempt', async () => {
    const l = await lane();
    const seen: Array<{ key: string; attempt: number }> = [];
    let failFirst = true;
    const tool = defineTool({
      name: 'charge',
      input: z.object({ cents: z.number() }),
      effect: 'opaque',
      destructive: false,
      execute(_args, ctx) {
        seen.push({ key: ctx.idempotencyKey, attempt: ctx.attempt });
        if (failFirst) {
          failFirst = false;
          throw new NeverStartedError('provider refused the request before charging');
        }
        return 'charged';
      },
    });
    l.worker({ tools: [tool] });
    const job = await l.run(jobData([call('charge', { cents: 500 })]), { attempts: 2 });
    expect((job.returnvalue as ToolJobResult).results[0]!.outcome).toBe('executed');
    expect(seen.map((s) => s.attempt)).toEqual([1, 2]);
    expect(seen[0]!.key).toBe(seen[1]!.key);
    expect(seen[0]!.key).toMatch(/^trc_[0-9a-f]{40}$/);
  });
});

describe('replaying receipts an operator resolved', () => {
  it('answers from whatever the operator recorded, or says nothing was recorded', async () => {
    const l = await lane();
    let runs = 0;
    const tool = defineTool({
      name: 'send_email',
      input: z.object({ to: z.string() }),
      effect: 'opaque',
      destructive: false,
      execute: () => `sent ${++runs}`,
    });
    const { processor } = l.worker({ tools: [tool], leaseMs: 200 });
    const store = processor.store;
    const ids = { runId: 'run-resolved' };
    const key = async (to: string) => ({
      tenantId: 'acme',
      runId: ids.runId,
      toolName: 'send_email',
      argsHash: await toolCallArgsHash({ to }),
    });
    // Two calls whose attempts died: claim them with a short lease and let it lapse.
    for (const to of ['a@x.test', 'b@x.test']) {
      const k = await key(to);
      await store.claim(k, { effect: 'opaque', leaseMs: 50 });
      await expect.poll(async () => (await store.inspect(k))!.leaseExpired, { timeout: 10_000 }).toBe(true);
      expect((await store.claim(k, { effect: 'opaque' })).decision.kind).toBe('ambiguous');
    }
    await store.resolve(await key('a@x.test'), { attemptsSeen: 1, outcome: 'completed', result: { messageId: 'm-1' } });
    await store.resolve(await key('b@x.test'), { attemptsSeen: 1, outcome: 'completed', result: undefined });
    const job = await l.run(jobData([call('send_email', { to: 'a@x.test' }), call('send_email', { to: 'b@x.test' })], ids));
    const [a, b] = (job.returnvalue as ToolJobResult).results;
    expect(a).toMatchObject({ outcome: 'replayed', content: '{"messageId":"m-1"}' });
    expect(b).toMatchObject({ outcome: 'replayed' });
    expect(b!.content).toMatch(/no result was recorded/);
    expect(runs).toBe(0);
  });
});

describe('structured logs', () => {
  it('writes one pino line per decision with the identifiers, decision, outcome and duration', async () => {
    const l = await lane();
    const t = countingTool();
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    l.worker({ tools: [t.tool], logger });
    const data = jobData([call('send_email', { to: 'log@x.test' }, 'toolu_log')], { tenantId: 'acme', runId: 'run-log' });
    await l.run(data);
    await l.run({ ...data, calls: [call('send_email', { to: 'log@x.test' }, 'toolu_log2')] });
    const decisions = lines.filter((line) => line.msg === 'tool call');
    expect(decisions).toHaveLength(2);
    expect(decisions[0]).toMatchObject({
      tenant: 'acme',
      run: 'run-log',
      tool: 'send_email',
      callId: 'toolu_log',
      decision: 'execute',
      outcome: 'executed',
      attempt: 1,
    });
    expect(decisions[1]).toMatchObject({ callId: 'toolu_log2', decision: 'replay', outcome: 'replayed' });
    for (const d of decisions) expect(typeof d.ms).toBe('number');
  });
});

describe('identical calls in one job', () => {
  it('share one receipt: the second replays the first', async () => {
    const l = await lane();
    const t = countingTool();
    l.worker({ tools: [t.tool] });
    const job = await l.run(
      jobData([call('send_email', { to: 'twice@x.test' }, 'toolu_a'), call('send_email', { to: 'twice@x.test' }, 'toolu_b')]),
    );
    const results = (job.returnvalue as ToolJobResult).results;
    expect(results.map((r) => [r.tool_use_id, r.outcome])).toEqual([
      ['toolu_a', 'executed'],
      ['toolu_b', 'replayed'],
    ]);
    expect(t.effects.get('twice@x.test')).toBe(1);
  });
});
