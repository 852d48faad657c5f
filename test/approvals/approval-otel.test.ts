/**
 * The approval gate in OpenTelemetry: a call's span carries an `approval`
 * event with the state it met (requested while it waits, then approved), and
 * a waiting call's span ends as `waited`.
 */
import { expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/bullmq/index.js';
import { approveCall, listPendingApprovals } from '../../src/approvals/index.js';
import { ATTR, EVENT, toolReceiptsOtel } from '../../src/otel/index.js';
import { call, jobData, useLanes } from '../bullmq/fixture.js';
import { spansWhere, testMeter, useOtelSdk } from '../otel/sdk.js';

const lane = useLanes({ queues: 'redis' });
const sdk = useOtelSdk();

it('a span event for the approval requested, then approved; the waiting span ends as waited', async () => {
  const l = await lane();
  const tool = defineTool({
    name: 'wipe',
    input: z.object({ id: z.string() }),
    effect: 'opaque',
    approval: 'always',
    execute: () => 'wiped',
  });
  l.worker({ tools: [tool], telemetry: toolReceiptsOtel({ meter: testMeter().meter }) });
  const data = jobData([call('wipe', { id: 'db-1' })]);
  const job = await l.add(data);
  await expect.poll(async () => (await listPendingApprovals({ redis: l.redis, prefix: l.prefix })).length, { timeout: 20_000 }).toBe(1);
  const [pending] = await listPendingApprovals({ redis: l.redis, prefix: l.prefix });
  await approveCall({ redis: l.redis, prefix: l.prefix, ...pending!, actor: 'ana', queue: l.queue });
  await l.settle(job);

  const spans = spansWhere(sdk.spans, ATTR.run, data.runId).sort(
    (a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1],
  );
  const approvals = spans.map((s) => s.events.filter((e) => e.name === EVENT.approval).map((e) => e.attributes?.[ATTR.approval]));
  expect(approvals).toEqual([['requested'], ['approved']]);
  expect(spans.map((s) => s.attributes[ATTR.outcome])).toEqual(['waited', 'executed']);
});
