import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { z } from 'zod';
import { NeverStartedError, OutcomeUnknownError, TIER_SUFFIX } from '../../src/core/index.js';
import { defineTool, parsePartialResultsLog, type AmbiguousToolCallError, type ToolJobResult } from '../../src/bullmq/index.js';
import { call, flakyTool, jobData, RETRYING, useLanes } from './fixture.js';

const lane = useLanes();
const results = (job: { returnvalue: unknown }) => (job.returnvalue as ToolJobResult).results;

describe('which failures retry the job', () => {
  it('an error of unknown meaning runs once: the model gets the error, the job does not retry', async () => {
    const l = await lane();
    const charge = flakyTool('charge_card', () => new Error('payment gateway 503'));
    const mcpDefault = flakyTool('delete_file', () => new Error('disk busy'), { destructive: undefined }); // destructive by MCP's default
    l.worker({ tools: [charge.tool, mcpDefault.tool] });
    const data = jobData([call('charge_card', { n: 1 }), call('delete_file', { n: 1 })]);
    const job = await l.run(data, RETRYING);
    expect(job.attemptsMade).toBe(1);
    expect(charge.runs()).toBe(1);
    expect(mcpDefault.runs()).toBe(1);
    const [a, b] = results(job);
    expect(a).toMatchObject({ outcome: 'failed', is_error: true });
    expect(a!.content).toContain('payment gateway 503');
    expect(a!.content).toContain(TIER_SUFFIX.neutral);
    expect(b).toMatchObject({ outcome: 'failed', is_error: true });
    // The receipt stays failed: a later, deliberate call (a new job) may run it again.
    const again = await l.run({ ...data, calls: [call('charge_card', { n: 1 })] }, RETRYING);
    expect(charge.runs()).toBe(2);
    expect(results(again)[0]).toMatchObject({ outcome: 'failed' });
    const receipt = (await l.store.listRun(data.tenantId, data.runId)).find((r) => r.key.toolName === 'charge_card');
    expect(receipt).toMatchObject({ status: 'failed', attempts: 2, tier: 'neutral' });
  });

  it('a failure that proves nothing ran, or of an idempotent tool, retries the job', async () => {
    const l = await lane();
    const lookup = flakyTool('lookup', (n) => (n === 1 ? new NeverStartedError('rate limited before sending') : undefined));
    const weather = flakyTool('get_weather', (n) => (n === 1 ? new Error('timeout') : undefined), { idempotent: true });
    l.worker({ tools: [lookup.tool, weather.tool] });
    const job = await l.run(jobData([call('lookup', { n: 1 }), call('get_weather', { n: 1 })]), RETRYING);
    expect(results(job).map((r) => r.content)).toEqual(['ok after 2', 'ok after 2']);
    expect(job.attemptsMade).toBe(3);
  });
});

/** A resumable tool whose first attempt sends, then cannot tell whether its confirmation landed; later ones confirm. */
function syncLedger() {
  let sent = 0;
  const sync = defineTool({
    name: 'sync_ledger',
    input: z.object({ n: z.number() }),
    effect: 'resumable',
    destructive: false,
    async execute(_args, ctx) {
      // Taken out of ctx, as a tool may: the step still records and replays under this attempt's fence.
      const { step } = ctx;
      await step('send', () => ++sent);
      if (ctx.attempt === 1) throw new OutcomeUnknownError('connection reset while confirming');
      return `confirmed on attempt ${ctx.attempt}`;
    },
  });
  return { sync, sent: () => sent };
}

describe('OutcomeUnknownError', () => {
  it('makes an opaque call ambiguous like a crash: listed, never rerun, the job fails keeping earlier results', async () => {
    const l = await lane();
    const ok = flakyTool('lookup_order', () => undefined);
    const pay = flakyTool('charge_card', () => new OutcomeUnknownError('gateway timed out after the request was sent'));
    const { processor } = l.worker({ tools: [ok.tool, pay.tool] });
    const data = jobData([
      call('lookup_order', { n: 1 }, 'toolu_first'),
      call('charge_card', { n: 7 }, 'toolu_pay'),
      call('lookup_order', { n: 2 }),
    ]);
    const job = await l.run(data, RETRYING);
    expect(job.failedReason).toMatch(/^receipt\.ambiguous: /);
    expect(job.attemptsMade).toBe(1);
    expect(ok.runs()).toBe(1); // the call after the ambiguous one was not run

    const receipt = (await l.store.listRun(data.tenantId, data.runId)).find((r) => r.key.toolName === 'charge_card')!;
    expect(receipt).toMatchObject({ status: 'running', leaseExpired: true });
    expect(receipt.ambiguousMs).not.toBeNull();
    expect((await processor.store.listAmbiguous()).map((r) => r.redisKey)).toContain(receipt.redisKey);

    // The completed results stay reachable: one job-log line in the shared format.
    const { logs } = await l.queue.getJobLogs(job.id!);
    const partial = logs.map(parsePartialResultsLog).filter((p) => p !== undefined);
    expect(partial).toHaveLength(1);
    expect(partial[0]!.results.map((r) => [r.tool_use_id, r.outcome, r.content])).toEqual([['toolu_first', 'executed', 'ok after 1']]);
    expect(partial[0]!.ambiguous).toEqual({ tool_use_id: 'toolu_pay', tool: 'charge_card', receiptKey: receipt.redisKey });

    // A redelivery of the call is ambiguous too; the tool never runs again.
    const again = await l.run({ ...data, calls: [call('charge_card', { n: 7 })] }, RETRYING);
    expect(again.failedReason).toMatch(/^receipt\.ambiguous: /);
    expect(pay.runs()).toBe(1);
  });

  it('carries the earlier results on the thrown error too', async () => {
    const l = await lane();
    const ok = flakyTool('lookup_order', () => undefined);
    const pay = flakyTool('charge_card', () => new OutcomeUnknownError('no answer'));
    const { worker } = l.worker({ tools: [ok.tool, pay.tool] });
    const failed = new Promise<Error>((resolve) => worker.once('failed', (_job, error) => resolve(error)));
    await l.run(jobData([call('lookup_order', { n: 1 }, 'toolu_a'), call('charge_card', { n: 1 }, 'toolu_b')]));
    const error = await failed;
    expect(error.message).toMatch(/^receipt\.ambiguous: /);
    const cause = (error as { cause?: AmbiguousToolCallError }).cause!;
    expect(cause.code).toBe('receipt.ambiguous');
    expect(cause.results.map((r) => r.tool_use_id)).toEqual(['toolu_a']);
  });

  it("with onAmbiguous 'report', the model gets an unknown-outcome result and the job goes on", async () => {
    const l = await lane();
    const pay = flakyTool('charge_card', () => new OutcomeUnknownError('no answer'));
    const ok = flakyTool('lookup_order', () => undefined);
    l.worker({ tools: [pay.tool, ok.tool], onAmbiguous: 'report' });
    const job = await l.run(jobData([call('charge_card', { n: 1 }), call('lookup_order', { n: 1 })]), RETRYING);
    expect(results(job).map((r) => r.outcome)).toEqual(['ambiguous', 'executed']);
    expect(results(job)[0]!.content).toMatch(/unknown/);
  });

  it('leaves a resumable call to be taken over from its recorded steps, like a crash', async () => {
    const l = await lane();
    const { sync, sent } = syncLedger();
    l.worker({ tools: [sync] });
    const job = await l.run(jobData([call('sync_ledger', { n: 1 })]), RETRYING);
    expect(results(job)[0]).toMatchObject({ outcome: 'executed', content: 'confirmed on attempt 2' });
    expect(sent()).toBe(1);
  });

  it("tells the model of a resumable call on the job's last attempt, and its next call takes it over from its steps", async () => {
    const l = await lane();
    const { sync, sent } = syncLedger();
    l.worker({ tools: [sync] });
    const data = jobData([call('sync_ledger', { n: 1 })]);
    const job = await l.run(data, { attempts: 1 });
    expect(job.failedReason).toBeFalsy();
    expect(results(job)[0]).toMatchObject({ outcome: 'failed', is_error: true });
    expect(results(job)[0]!.content).toContain('connection reset while confirming');
    const again = await l.run(data);
    expect(results(again)[0]).toMatchObject({ outcome: 'executed', content: 'confirmed on attempt 2' });
    expect(sent()).toBe(1);
  });
});

describe('the log line of a failed call', () => {
  it('is a warning carrying the error text and the tier', async () => {
    const l = await lane();
    const lines: Array<Record<string, unknown>> = [];
    // At warn, as a production logger often is: the failure is still there, the calls that went well are not.
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const t = flakyTool('sync', () => new Error('upstream said 500'));
    const ok = flakyTool('lookup', () => undefined);
    l.worker({ tools: [t.tool, ok.tool], logger });
    await l.run(jobData([call('lookup', { n: 1 }), call('sync', { n: 1 })]));
    const calls = lines.filter((x) => x.msg === 'tool call');
    expect(calls).toEqual([
      expect.objectContaining({
        level: 40,
        tool: 'sync',
        decision: 'execute',
        outcome: 'failed',
        error: 'upstream said 500',
        tier: 'neutral',
      }),
    ]);
  });
});

describe('what the model reads after a failure', () => {
  it('reads as sentences: the error, a full stop, then the advice', async () => {
    const l = await lane();
    const plain = flakyTool('sync', () => new Error('upstream said 500'));
    const ended = flakyTool('push', () => new Error('the queue is full.'));
    l.worker({ tools: [plain.tool, ended.tool] });
    const job = await l.run(jobData([call('sync', { n: 1 }), call('push', { n: 1 })]), { attempts: 1 });
    const [a, b] = results(job);
    expect(a!.content).toBe(`Tool sync failed: upstream said 500. ${TIER_SUFFIX.neutral}`);
    expect(b!.content).toBe(`Tool push failed: the queue is full. ${TIER_SUFFIX.neutral}`);
  });
});
