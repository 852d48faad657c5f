/**
 * Limits in OpenTelemetry: a call its limit refuses or parks carries an
 * `over_limit` span event naming the limit, what it does over it and when
 * the window lets the call run; a parked call's span ends `waited` with
 * status OK (a wait is not an error), and the call's later delivery runs it.
 */
import { SpanStatusCode } from '@opentelemetry/api';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type ToolJobResult } from '../../src/bullmq/index.js';
import { defineLimit, LimitStore } from '../../src/limits/index.js';
import { ATTR, EVENT, toolReceiptsOtel } from '../../src/otel/index.js';
import { call, jobData, silent, useLanes } from '../bullmq/fixture.js';
import { spansWhere, testMeter, useOtelSdk } from '../otel/sdk.js';
import { clearOfWindowEnd, YEAR_MS } from '../support/limit-windows.js';

const lane = useLanes({ queues: 'redis' });
const sdk = useOtelSdk();

const emailTool = () =>
  defineTool({
    name: 'send_email',
    input: z.object({ to: z.string() }),
    effect: 'opaque',
    destructive: false,
    execute: (args) => `sent to ${args.to}`,
  });

const byStart = <T extends { startTime: [number, number] }>(spans: T[]) =>
  spans.sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);

it('a refused call: its span carries over_limit with the limit and refuse, and ends rejected', async () => {
  const l = await lane();
  const once = defineLimit({ name: 'once-a-run', per: 'run', max: 1, windowMs: YEAR_MS });
  l.worker({ tools: [emailTool()], logger: silent, limits: [once], telemetry: toolReceiptsOtel({ meter: testMeter().meter }) });
  const data = jobData([call('send_email', { to: 'a' }), call('send_email', { to: 'b' })]);
  const job = await l.run(data);
  expect((job.returnvalue as ToolJobResult).results.map((r) => r.outcome)).toEqual(['executed', 'rejected']);

  const spans = byStart(spansWhere(sdk.spans, ATTR.run, data.runId));
  expect(spans.map((s) => s.attributes[ATTR.outcome])).toEqual(['executed', 'rejected']);
  expect(spans[0]!.events.filter((e) => e.name === EVENT.overLimit)).toEqual([]);
  const [event, ...more] = spans[1]!.events.filter((e) => e.name === EVENT.overLimit);
  expect(more).toEqual([]);
  expect(event?.attributes).toMatchObject({ [ATTR.limit]: 'once-a-run', [ATTR.onLimit]: 'refuse' });
  expect(Number(event?.attributes?.[ATTR.retryAtMs])).toBeGreaterThan(Date.now());
});

it('a parked call: over_limit with wait, its span ends waited with status OK and no exception, and its next delivery runs it', async () => {
  const l = await lane();
  const windowMs = 2_000;
  const once = defineLimit({ name: 'one-per-window', per: 'run', max: 1, windowMs, onLimit: 'wait' });
  l.worker({ tools: [emailTool()], logger: silent, limits: [once], telemetry: toolReceiptsOtel({ meter: testMeter().meter }) });
  const data = jobData([call('send_email', { to: 'a' }), call('send_email', { to: 'b' })]);
  // Start early in a window on the server clock, so both calls meet the same one and the second is parked.
  await clearOfWindowEnd(new LimitStore({ redis: l.redis, prefix: l.prefix }), once, data, (windowMs * 2) / 3);
  const job = await l.settle(await l.add(data), 30_000);
  expect((job.returnvalue as ToolJobResult).results.map((r) => r.outcome)).toEqual(['replayed', 'executed']);

  const spans = byStart(spansWhere(sdk.spans, ATTR.run, data.runId));
  // First delivery: a executed, b parked; the next: a replayed, b executed.
  expect(spans.map((s) => s.attributes[ATTR.outcome])).toEqual(['executed', 'waited', 'replayed', 'executed']);
  const parked = spans[1]!;
  expect(parked.status.code).toBe(SpanStatusCode.OK);
  expect(parked.events.some((e) => e.name === 'exception')).toBe(false);
  const events = parked.events.filter((e) => e.name === EVENT.overLimit);
  expect(events).toHaveLength(1);
  expect(events[0]!.attributes).toMatchObject({ [ATTR.limit]: 'one-per-window', [ATTR.onLimit]: 'wait' });
  expect(spans.filter((s) => s !== parked).every((s) => s.events.every((e) => e.name !== EVENT.overLimit))).toBe(true);
});
