/** OpenTelemetry from real workers: each call's span and its events, the counters and histograms, and the limit gauges. */
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { BullMQOtel } from 'bullmq-otel';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { OutcomeUnknownError, toolCallArgsHash } from '../../src/core/index.js';
import { defineTool, type ToolJobResult } from '../../src/bullmq/index.js';
import { ATTR, EVENT, METRIC, toolReceiptsOtel, type ToolReceiptsOtelOptions } from '../../src/otel/index.js';
import { call, jobData, sendEmailSettlingLate, useLanes, type Lane } from '../bullmq/fixture.js';
import { countWhere, spansWhere, sumWhere, testMeter, useOtelSdk, type TestMeter } from './sdk.js';
import { YEAR_MS } from '../support/limit-windows.js';

const lane = useLanes();
const sdk = useOtelSdk();

/** A tool that counts its runs, optionally held at a gate, optionally throwing. */
function gatedTool(options: { name?: string; effect?: 'opaque' | 'resumable'; fail?: string } = {}) {
  let runs = 0;
  let gate: Promise<void> = Promise.resolve();
  let open = () => {};
  let entered = () => {};
  let enteredOnce = new Promise<void>((r) => (entered = r));
  const tool = defineTool({
    name: options.name ?? 'send_email',
    input: z.object({ to: z.string() }),
    effect: options.effect ?? 'opaque',
    destructive: false,
    async execute(args) {
      runs++;
      entered();
      await gate;
      if (options.fail) throw new Error(options.fail);
      return `sent to ${args.to}`;
    },
  });
  return {
    tool,
    runs: () => runs,
    hold() {
      gate = new Promise<void>((r) => (open = r));
      enteredOnce = new Promise<void>((r) => (entered = r));
    },
    release: () => open(),
    entered: () => enteredOnce,
  };
}

/** A worker with our telemetry and, unless told otherwise, BullMQ's. */
function tracedWorker(
  l: Lane,
  m: TestMeter,
  options: Parameters<Lane['worker']>[0],
  {
    bullmqTelemetry = true,
    otel = {},
    concurrency = 1,
  }: { bullmqTelemetry?: boolean; otel?: ToolReceiptsOtelOptions; concurrency?: number } = {},
) {
  return l.worker(
    { ...options, telemetry: toolReceiptsOtel({ meter: m.meter, ...otel }) },
    { concurrency, ...(bullmqTelemetry ? { telemetry: new BullMQOtel({ tracerName: 'bullmq-test' }) } : {}) },
  );
}

/** An attempt that died inside its effect: the call claimed with a short lease, left to lapse. Returns the receipt key. */
async function lostAttempt(l: Lane, data: ReturnType<typeof jobData>, toolName: string, args: unknown) {
  const key = { tenantId: data.tenantId, runId: data.runId, toolName, argsHash: await toolCallArgsHash(args) };
  await l.store.claim(key, { effect: 'opaque', leaseMs: 50 });
  await expect.poll(async () => (await l.store.inspect(key))!.leaseExpired, { timeout: 10_000 }).toBe(true);
  return key;
}

/** A run's call spans in the order they started: by HrTime's seconds, then its nanoseconds (the nanoseconds alone wrap every second). */
const callSpans = (runId: string) =>
  spansWhere(sdk.spans, ATTR.run, runId).sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
const byId = (id: string | undefined) => sdk.spans.getFinishedSpans().find((s) => s.spanContext().spanId === id);
const events = (span: ReadableSpan) => span.events.map((e) => e.name);

describe('OpenTelemetry: spans', () => {
  it("each call is a span under BullMQ's job span, with the decision, outcome, attempt and receipt key", async () => {
    const l = await lane();
    const m = testMeter();
    const t = gatedTool();
    tracedWorker(l, m, { tools: [t.tool] });
    const data = jobData([call('send_email', { to: 'a@x.test' }, 'toolu_a')]);
    const first = await l.run(data);
    const second = await l.run(data);
    expect([first, second].map((j) => (j.returnvalue as ToolJobResult).results[0]!.outcome)).toEqual(['executed', 'replayed']);

    const spans = callSpans(data.runId);
    expect(spans.map((s) => s.name)).toEqual(['send_email', 'send_email']);
    const receipt = await l.receipt(data.tenantId, data.runId);
    for (const [span, decision, outcome] of [
      [spans[0]!, 'execute', 'executed'],
      [spans[1]!, 'replay', 'replayed'],
    ] as const) {
      const parent = byId(span.parentSpanContext?.spanId);
      expect(parent, 'the call span has a parent among the finished spans').toBeDefined();
      expect(parent!.name).toBe(`process ${l.queueName}`);
      expect(parent!.kind).toBe(SpanKind.CONSUMER);
      expect(parent!.spanContext().traceId).toBe(span.spanContext().traceId);
      expect(span.attributes).toMatchObject({
        [ATTR.tenant]: data.tenantId,
        [ATTR.run]: data.runId,
        [ATTR.tool]: 'send_email',
        [ATTR.callId]: 'toolu_a',
        [ATTR.decision]: decision,
        [ATTR.outcome]: outcome,
        [ATTR.receiptKey]: receipt.redisKey,
      });
      expect(span.status.code).toBe(SpanStatusCode.OK);
    }
    expect(spans[0]!.attributes[ATTR.attempt]).toBe(1);
    expect(spans[1]!.attributes[ATTR.attempt]).toBeUndefined();
    // The two jobs are two traces.
    expect(spans[0]!.spanContext().traceId).not.toBe(spans[1]!.spanContext().traceId);
  });

  it('without BullMQ telemetry the call span is a root span', async () => {
    const l = await lane();
    const t = gatedTool();
    tracedWorker(l, testMeter(), { tools: [t.tool] }, { bullmqTelemetry: false });
    const data = jobData([call('send_email', { to: 'r@x.test' })]);
    await l.run(data);
    const [span] = callSpans(data.runId);
    expect(span!.parentSpanContext).toBeUndefined();
    expect(span!.attributes[ATTR.outcome]).toBe('executed');
  });

  it('round trips get child spans only when asked (roundTripSpans), the claim and the settle', async () => {
    const childrenOf = (span: ReadableSpan) =>
      sdk.spans
        .getFinishedSpans()
        .filter((s) => s.parentSpanContext?.spanId === span.spanContext().spanId)
        .map((s) => s.name);
    for (const roundTripSpans of [false, true]) {
      const l = await lane();
      const t = gatedTool();
      tracedWorker(l, testMeter(), { tools: [t.tool] }, { otel: { roundTripSpans } });
      const data = jobData([call('send_email', { to: 'rt@x.test' })]);
      await l.run(data);
      await l.run(data);
      const [executed, replayed] = callSpans(data.runId);
      expect(childrenOf(executed!)).toEqual(roundTripSpans ? ['tool_receipts.claim', 'tool_receipts.complete'] : []);
      expect(childrenOf(replayed!)).toEqual(roundTripSpans ? ['tool_receipts.claim'] : []);
    }
  });

  it('a wait is an event with the delay; the job comes back and replays', async () => {
    const l = await lane();
    const m = testMeter();
    const t = gatedTool();
    t.hold();
    tracedWorker(
      l,
      m,
      { tools: [t.tool], leaseMs: 2000, maxWaitMs: 200, waitJitterMs: 10 },
      { otel: { tenantInMetrics: true }, concurrency: 2 },
    );
    const data = jobData([call('send_email', { to: 'w@x.test' })], { tenantId: 'globex' });
    const first = await l.add(data);
    await t.entered();
    const second = await l.add(data);
    await expect.poll(() => callSpans(data.runId).length, { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
    t.release();
    await l.settle(first);
    await l.settle(second);
    const spans = callSpans(data.runId);
    const waits = spans.filter((s) => s.attributes[ATTR.decision] === 'wait');
    expect(waits.length).toBeGreaterThanOrEqual(1);
    for (const w of waits) {
      expect(w.attributes[ATTR.outcome]).toBe('waited');
      expect(events(w)).toEqual([EVENT.wait]);
      expect(w.events[0]!.attributes!['delay_ms']).toEqual(expect.any(Number));
      expect(w.status.code).toBe(SpanStatusCode.OK);
    }
    expect(
      spans
        .map((s) => s.attributes[ATTR.outcome])
        .filter((o) => o !== 'waited')
        .sort(),
    ).toEqual(['executed', 'replayed']);
    // Tenant as a metric attribute, because this observer opted in.
    const points = await m.points(METRIC.calls);
    expect(sumWhere(points, { [ATTR.tenant]: 'globex', [ATTR.decision]: 'wait', [ATTR.outcome]: 'waited' })).toBe(waits.length);
  });

  it("a failed call records the tool's error and its tier", async () => {
    const l = await lane();
    const m = testMeter();
    const t = gatedTool({ fail: 'smtp is down' });
    tracedWorker(l, m, { tools: [t.tool] });
    const data = jobData([call('send_email', { to: 'f@x.test' })]);
    const job = await l.run(data, { attempts: 1 });
    expect((job.returnvalue as ToolJobResult).results[0]!.outcome).toBe('failed');
    const [span] = callSpans(data.runId);
    expect(span!.attributes).toMatchObject({
      [ATTR.decision]: 'execute',
      [ATTR.outcome]: 'failed',
      [ATTR.tier]: 'neutral',
      [ATTR.attempt]: 1,
    });
    expect(span!.status.code).toBe(SpanStatusCode.ERROR);
    const exception = span!.events.find((e) => e.name === 'exception');
    expect(exception?.attributes?.['exception.message']).toBe('smtp is down');
  });

  it('an attempt fenced out by a takeover is an event, a counter and the outcome', async () => {
    const l = await lane();
    const m = testMeter();
    const t = gatedTool({ effect: 'resumable' });
    t.hold();
    tracedWorker(l, m, { tools: [t.tool] });
    const data = jobData([call('send_email', { to: 'o@x.test' })]);
    const job = await l.add(data, { attempts: 1 });
    await t.entered();
    // What a takeover does to the receipt: a new attempt now owns it.
    const receipt = await l.receipt(data.tenantId, data.runId);
    await l.redis.hincrby(receipt.redisKey, 'attempts', 1);
    t.release();
    const failed = await l.settle(job);
    expect(failed.failedReason).toMatch(/fenced out/);
    const [span] = callSpans(data.runId);
    expect(span!.attributes[ATTR.outcome]).toBe('fenced_out');
    const fenced = span!.events.find((e) => e.name === EVENT.fencedOut);
    expect(['heartbeat', 'complete']).toContain(fenced?.attributes?.[ATTR.during]);
    expect(span!.status.code).toBe(SpanStatusCode.ERROR);
    expect(sumWhere(await m.points(METRIC.fencedOut), { [ATTR.tool]: 'send_email' })).toBe(1);
  });
});

describe('OpenTelemetry: calls without a claim, and unknown outcomes', () => {
  it('a read-only tool is a direct call with no receipt key, and its duration is measured', async () => {
    const l = await lane();
    const m = testMeter();
    const lookup = defineTool({
      name: 'lookup',
      input: z.object({ q: z.string() }),
      effect: 'opaque',
      readOnly: true,
      execute: (a) => a.q,
    });
    tracedWorker(l, m, { tools: [lookup] });
    const data = jobData([call('lookup', { q: 'x' })]);
    await l.run(data);
    const [span] = callSpans(data.runId);
    expect(span!.attributes).toMatchObject({ [ATTR.decision]: 'direct', [ATTR.outcome]: 'executed' });
    expect(span!.attributes[ATTR.receiptKey]).toBeUndefined();
    expect(countWhere(await m.points(METRIC.toolDuration), { [ATTR.tool]: 'lookup' })).toBe(1);
  });

  it('an opaque tool that cannot tell whether its effect landed ends ambiguous and stays in the gauge', async () => {
    const l = await lane();
    const m = testMeter();
    const pay = defineTool({
      name: 'charge_card',
      input: z.object({ cents: z.number() }),
      effect: 'opaque',
      destructive: false,
      execute: async () => {
        throw new OutcomeUnknownError('gateway timed out after the request was sent');
      },
    });
    tracedWorker(l, m, { tools: [pay] });
    const data = jobData([call('charge_card', { cents: 100 })]);
    const job = await l.run(data, { attempts: 1 });
    expect(job.failedReason).toMatch(/^receipt\.ambiguous/);
    const [span] = callSpans(data.runId);
    expect(span!.attributes).toMatchObject({
      [ATTR.decision]: 'execute',
      [ATTR.outcome]: 'outcome_unknown',
      [ATTR.tier]: 'outcomeUnknown',
    });
    expect(events(span!)).toContain(EVENT.outcomeUnknown);
    expect(span!.events.find((e) => e.name === 'exception')?.attributes?.['exception.message']).toMatch(/gateway timed out/);
    expect(sumWhere(await m.points(METRIC.ambiguous), { [ATTR.prefix]: l.prefix })).toBe(1);
  });
});

describe('OpenTelemetry: late settles', () => {
  it('a settle after an ambiguous verdict is an event on the call span and a counter', async () => {
    const l = await lane();
    const m = testMeter();
    // Another delivery claims while this process is stalled, after the lease lapsed: it reports the call ambiguous.
    const { tool, verdict } = sendEmailSettlingLate(l);
    tracedWorker(l, m, { tools: [tool], leaseMs: 300 });
    const data = jobData([call('send_email', { to: 'late@x.test' })]);
    const job = await l.run(data);
    expect(verdict()?.decision.kind).toBe('ambiguous');
    expect((job.returnvalue as ToolJobResult).results[0]!.outcome).toBe('executed');
    const [span] = callSpans(data.runId);
    expect(span!.attributes[ATTR.outcome]).toBe('executed');
    expect(span!.events.find((e) => e.name === EVENT.lateSettle)?.attributes).toEqual({ [ATTR.outcome]: 'executed' });
    expect(sumWhere(await m.points(METRIC.lateSettles), { [ATTR.tool]: 'send_email', [ATTR.outcome]: 'executed' })).toBe(1);
  });
});

describe('OpenTelemetry: aborted attempts', () => {
  it('a call aborted by a lost BullMQ lock is an abort event and the outcome', async () => {
    const l = await lane();
    let running = () => {};
    const started = new Promise<void>((r) => (running = r));
    const tool = defineTool({
      name: 'long_call',
      input: z.object({ n: z.number() }),
      effect: 'opaque',
      destructive: false,
      execute: (_args, ctx) =>
        new Promise((_resolve, reject) => {
          running();
          ctx.signal.addEventListener('abort', () => reject(new Error('cut off')), { once: true });
        }),
    });
    const { worker } = tracedWorker(l, testMeter(), { tools: [tool], leaseMs: 300 });
    const data = jobData([call('long_call', { n: 1 })]);
    const job = await l.add(data, { attempts: 1 });
    await started;
    worker.emit('lockRenewalFailed', [job.id!]);
    await l.settle(job);
    const [span] = callSpans(data.runId);
    expect(span!.attributes[ATTR.outcome]).toBe('aborted');
    expect(events(span!)).toContain(EVENT.abort);
    expect(span!.status.code).toBe(SpanStatusCode.ERROR);
  });
});

describe('OpenTelemetry: ambiguity', () => {
  it('an ambiguous call is an event and an error status, and the gauge counts it until it is resolved', async () => {
    const l = await lane();
    const m = testMeter();
    const t = gatedTool();
    tracedWorker(l, m, { tools: [t.tool], onAmbiguous: 'report' });
    const data = jobData([call('send_email', { to: 'amb@x.test' })]);
    const key = await lostAttempt(l, data, 'send_email', { to: 'amb@x.test' });

    const job = await l.run(data);
    expect((job.returnvalue as ToolJobResult).results[0]!.outcome).toBe('ambiguous');
    expect(t.runs()).toBe(0);
    const [span] = callSpans(data.runId);
    expect(span!.attributes).toMatchObject({ [ATTR.decision]: 'ambiguous', [ATTR.outcome]: 'ambiguous' });
    expect(events(span!)).toEqual([EVENT.ambiguous]);
    expect(span!.status.code).toBe(SpanStatusCode.ERROR);

    const gauge = async () => sumWhere(await m.points(METRIC.ambiguous), { [ATTR.prefix]: l.prefix });
    expect(await gauge()).toBe(1);
    await l.store.resolve(key, { attemptsSeen: 1, outcome: 'completed', result: 'checked: it went out' });
    expect(await gauge()).toBe(0);
  });
});

describe('OpenTelemetry: reconciles', () => {
  it("a claim that settled a lost attempt through the tool's reconcile is a reconcile event with the verdict; a keyed re-run is its own event", async () => {
    const l = await lane();
    let sent = 0;
    const tool = defineTool({
      name: 'send_email',
      input: z.object({ to: z.string() }),
      effect: 'opaque',
      destructive: false,
      execute: async (args) => `sent to ${args.to} (${++sent})`,
      // The outbox knows the first address went out and the second never did.
      reconcile: async (args) =>
        args.to === 'went@x.test' ? { status: 'completed', result: 'found in the outbox' } : { status: 'not_started' },
    });
    const charge = defineTool({
      name: 'charge_card',
      input: z.object({ cents: z.number() }),
      effect: 'keyed',
      keyWindowMs: 60_000,
      destructive: false,
      execute: async (args) => `charged ${args.cents}`,
    });
    tracedWorker(l, testMeter(), { tools: [tool, charge] });
    for (const [to, decision, verdict, outcome] of [
      ['went@x.test', 'replay', 'completed', 'replayed'],
      ['never@x.test', 'execute', 'not_started', 'executed'],
    ] as const) {
      const data = jobData([call('send_email', { to })]);
      await lostAttempt(l, data, 'send_email', { to });
      await l.run(data);
      const [span] = callSpans(data.runId);
      expect(span!.attributes).toMatchObject({ [ATTR.decision]: decision, [ATTR.outcome]: outcome });
      expect(span!.events.find((e) => e.name === EVENT.reconcile)?.attributes).toEqual({ [ATTR.verdict]: verdict });
    }
    expect(sent).toBe(1);

    // A keyed call inside its window is run again with the same key: a keyed_rerun event, and no reconcile.
    const data = jobData([call('charge_card', { cents: 500 })]);
    await lostAttempt(l, data, 'charge_card', { cents: 500 });
    await l.run(data);
    const [span] = callSpans(data.runId);
    expect(span!.attributes).toMatchObject({ [ATTR.decision]: 'execute', [ATTR.attempt]: 2, [ATTR.outcome]: 'executed' });
    expect(events(span!)).toEqual([EVENT.keyedRerun]);
  });
});

describe('OpenTelemetry: metrics', () => {
  it('counters and histograms match the calls made', async () => {
    const l = await lane();
    const m = testMeter();
    const ok = gatedTool();
    const bad = gatedTool({ name: 'open_ticket', fail: 'tracker refused' });
    tracedWorker(l, m, { tools: [ok.tool, bad.tool] });
    const calls = ['a', 'b', 'c'].map((to) => call('send_email', { to }));
    const data = jobData([...calls, call('open_ticket', { to: 't' }), call('no_such_tool', {})]);
    await l.run(data, { attempts: 1 });
    await l.run({ ...data, calls: calls.slice(0, 2) }, { attempts: 1 });

    const counted = await m.points(METRIC.calls);
    const send = { [ATTR.tool]: 'send_email' };
    expect(sumWhere(counted, { ...send, [ATTR.decision]: 'execute', [ATTR.outcome]: 'executed' })).toBe(3);
    expect(sumWhere(counted, { ...send, [ATTR.decision]: 'replay', [ATTR.outcome]: 'replayed' })).toBe(2);
    expect(sumWhere(counted, { [ATTR.tool]: 'open_ticket', [ATTR.decision]: 'execute', [ATTR.outcome]: 'failed' })).toBe(1);
    expect(sumWhere(counted, { [ATTR.tool]: 'no_such_tool', [ATTR.decision]: 'reject', [ATTR.outcome]: 'rejected' })).toBe(1);
    expect(sumWhere(counted, {})).toBe(7);
    expect(counted.every((p) => p.attributes[ATTR.tenant] === undefined)).toBe(true);

    // The tool ran 4 times; every one of the 7 calls has an overhead figure.
    expect(countWhere(await m.points(METRIC.toolDuration), {})).toBe(4);
    expect(countWhere(await m.points(METRIC.overhead), {})).toBe(7);
    expect(countWhere(await m.points(METRIC.overhead), { ...send, [ATTR.decision]: 'replay' })).toBe(2);
    // Settled calls leave the open-receipt index, so the gauge has nothing to count.
    expect(sumWhere(await m.points(METRIC.ambiguous), { [ATTR.prefix]: l.prefix })).toBe(0);
    const shards = await l.redis.keys(`${l.prefix}:open:*`);
    const sizes = await Promise.all(shards.map((k) => l.redis.zcard(k)));
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(0);
  });
});

describe('OpenTelemetry: limit gauges', () => {
  it("reports each limit's used and left: a global one always, a tenant's per tenant seen with tenantInMetrics", async () => {
    const l = await lane();
    const m = testMeter();
    const send = defineTool({
      name: 'send_email',
      input: z.object({ to: z.string() }),
      effect: 'opaque',
      destructive: false,
      execute: () => 'sent',
    });
    const limits = [
      { name: `fleet-${l.prefix}`, per: 'global' as const, max: 50, windowMs: YEAR_MS },
      { name: 'emails', per: 'tenant' as const, max: 5, windowMs: YEAR_MS },
      { name: 'steps', per: 'run' as const, max: 5, windowMs: YEAR_MS },
    ];
    tracedWorker(l, m, { tools: [send], limits }, { otel: { tenantInMetrics: true } });
    await l.run(jobData([call('send_email', { to: 'a' }), call('send_email', { to: 'b' })], { tenantId: 'acme' }));
    const used = await m.points(METRIC.limitUsed);
    const left = await m.points(METRIC.limitLeft);
    expect(sumWhere(used, { [ATTR.limit]: 'emails', [ATTR.tenant]: 'acme', [ATTR.prefix]: l.prefix })).toBe(2);
    expect(sumWhere(left, { [ATTR.limit]: 'emails', [ATTR.tenant]: 'acme' })).toBe(3);
    expect(sumWhere(used, { [ATTR.limit]: `fleet-${l.prefix}`, [ATTR.limitPer]: 'global' })).toBe(2);
    expect(used.filter((p) => p.attributes[ATTR.limit] === 'steps')).toEqual([]);
  });

  it("reports an in-flight cap's slots on the same gauges: held as used, free as left", async () => {
    const l = await lane();
    const m = testMeter();
    let release = () => {};
    const holding = new Promise<void>((r) => (release = r));
    let entered = () => {};
    const started = new Promise<void>((r) => (entered = r));
    const browse = defineTool({
      name: 'browse',
      input: z.object({ url: z.string() }),
      effect: 'opaque',
      destructive: false,
      async execute() {
        entered();
        await holding;
        return 'read';
      },
    });
    tracedWorker(
      l,
      m,
      { tools: [browse], limits: [{ name: 'browsing', per: 'tenant', concurrency: 3 }] },
      { otel: { tenantInMetrics: true } },
    );
    const job = await l.add(jobData([call('browse', { url: 'a' })], { tenantId: 'acme' }));
    await started;
    expect(sumWhere(await m.points(METRIC.limitUsed), { [ATTR.limit]: 'browsing', [ATTR.tenant]: 'acme', [ATTR.limitPer]: 'tenant' })).toBe(
      1,
    );
    expect(sumWhere(await m.points(METRIC.limitLeft), { [ATTR.limit]: 'browsing', [ATTR.tenant]: 'acme' })).toBe(2);
    release();
    await l.settle(job);
    expect(sumWhere(await m.points(METRIC.limitUsed), { [ATTR.limit]: 'browsing', [ATTR.tenant]: 'acme' })).toBe(0);
  });
});
