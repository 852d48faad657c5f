import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  DestructiveRanError,
  MAX_TOOL_FAILURES,
  MAX_TOOL_REJECTIONS,
  NeverStartedError,
  REJECTION_REMOVAL_SUFFIX,
  TIER_SUFFIX,
  ToolRefusedError,
} from '../../src/core/index.js';
import { BreakerStore, ReceiptStore } from '../../src/redis/index.js';
import { defineTool, type ToolJobResult } from '../../src/bullmq/index.js';
import { call, flakyTool, jobData, useLanes } from './fixture.js';

const lane = useLanes();
const results = (job: { returnvalue: unknown }) => (job.returnvalue as ToolJobResult).results;

describe('failure tiers', () => {
  it('neverStarted: receipt failed, the job retries, and the retry executes attempt 2', async () => {
    const l = await lane();
    const t = flakyTool('lookup', (n) => (n === 1 ? new NeverStartedError('rate limited before sending') : undefined));
    const { processor } = l.worker({ tools: [t.tool] });
    const data = jobData([call('lookup', { n: 1 })]);
    const job = await l.run(data, { attempts: 3 });
    expect(results(job)[0]).toMatchObject({ outcome: 'executed', content: 'ok after 2' });
    const [receipt] = await processor.store.listRun(data.tenantId, data.runId);
    expect(receipt).toMatchObject({ status: 'completed', attempts: 2 });
    expect(job.attemptsMade).toBe(2);
  });

  it('neutral on the last attempt: an error result with the neutral suffix, receipt failed', async () => {
    const l = await lane();
    const t = flakyTool('sync', () => new Error('upstream said 500'));
    const { processor } = l.worker({ tools: [t.tool] });
    const data = jobData([call('sync', { n: 1 })]);
    const job = await l.run(data, { attempts: 1 });
    const [r] = results(job);
    expect(r).toMatchObject({ outcome: 'failed', is_error: true });
    expect(r!.content).toContain('upstream said 500');
    expect(r!.content).toContain(TIER_SUFFIX.neutral);
    const [receipt] = await processor.store.listRun(data.tenantId, data.runId);
    expect(receipt).toMatchObject({ status: 'failed', tier: 'neutral', error: 'upstream said 500' });
  });

  it('neutral: a later delivery of the same job answers the failure again and never reruns the tool; a new job runs it', async () => {
    const l = await lane();
    const charge = flakyTool('charge', () => new Error('card network said 502'));
    // The second call proves nothing ran twice, so the job retries: the retry meets charge's failure again.
    const lookup = flakyTool('lookup', (n) => (n < 3 ? new NeverStartedError('not ready yet') : undefined));
    const { processor } = l.worker({ tools: [charge.tool, lookup.tool] });
    const chargeCall = call('charge', { n: 1 });
    const data = jobData([chargeCall, call('lookup', { n: 1 })]);
    const job = await l.run(data, { attempts: 3 });
    expect(job.attemptsMade).toBe(3);
    expect(charge.runs()).toBe(1);
    const [charged, looked] = results(job);
    expect(charged).toMatchObject({ outcome: 'failed', is_error: true });
    expect(charged!.content).toContain('card network said 502');
    expect(charged!.content).toContain(TIER_SUFFIX.neutral);
    expect(looked).toMatchObject({ outcome: 'executed', content: 'ok after 3' });
    const receipts = await processor.store.listRun(data.tenantId, data.runId);
    expect(receipts.find((r) => r.key.toolName === 'charge')).toMatchObject({ status: 'failed', attempts: 1, tier: 'neutral' });
    // The model calls it again, deliberately: a new job, the next attempt.
    const again = await l.run({ ...data, calls: [chargeCall] });
    expect(results(again)[0]).toMatchObject({ outcome: 'failed' });
    expect(charge.runs()).toBe(2);
    expect((await processor.store.listRun(data.tenantId, data.runId)).find((r) => r.key.toolName === 'charge')).toMatchObject({
      attempts: 2,
    });
  });

  it('idempotent: the tool declaration picks the tier and its suffix', async () => {
    const l = await lane();
    const t = flakyTool('get_weather', () => new Error('timeout'), { idempotent: true });
    const { processor } = l.worker({ tools: [t.tool] });
    const data = jobData([call('get_weather', { n: 1 })]);
    const job = await l.run(data, { attempts: 1 });
    expect(results(job)[0]!.content).toContain(TIER_SUFFIX.idempotent);
    const [receipt] = await processor.store.listRun(data.tenantId, data.runId);
    expect(receipt!.tier).toBe('idempotent');
  });

  it('destructive: the job fails unrecoverably and the tool is removed for the run', async () => {
    const l = await lane();
    const t = flakyTool('drop_table', () => new DestructiveRanError('dropped half the partitions'));
    const { processor } = l.worker({ tools: [t.tool] });
    const ids = { runId: 'run-destructive' };
    const job = await l.run(jobData([call('drop_table', { n: 1 })], ids), { attempts: 5 });
    expect(job.failedReason).toMatch(/^tool\.failed: /);
    expect(job.failedReason).toContain(TIER_SUFFIX.destructive);
    expect(job.attemptsMade).toBe(1);
    expect(await processor.breaker.removal('acme', ids.runId, 'drop_table')).not.toBeNull();
    // Any later call of the tool in this run is refused without running.
    const later = await l.run(jobData([call('drop_table', { n: 2 })], ids));
    expect(results(later)[0]).toMatchObject({ outcome: 'rejected', is_error: true });
    expect(results(later)[0]!.content).toContain(REJECTION_REMOVAL_SUFFIX);
    expect(t.runs()).toBe(1);
    // Another run is unaffected.
    await l.run(jobData([call('drop_table', { n: 3 })]));
    expect(t.runs()).toBe(2);
  });

  it('destructive, met again by the same job after a worker died before the breaker was written: not run, and the tool removed', async () => {
    const l = await lane();
    const t = flakyTool('drop_table', () => new DestructiveRanError('dropped half the partitions'));
    const { processor } = l.worker({ tools: [t.tool] });
    const ids = { runId: 'run-destructive-crash' };
    const job = await l.run(jobData([call('drop_table', { n: 1 })], ids), { attempts: 5 });
    expect(job.failedReason).toContain(TIER_SUFFIX.destructive);
    // As if the worker had died between the receipt's write and the breaker's: no removal recorded.
    await l.redis.del(processor.breaker.redisKey('acme', ids.runId));
    expect(await processor.breaker.removal('acme', ids.runId, 'drop_table')).toBeNull();
    // The same job delivered again: the failure stands, the tool does not run, and it is removed for the run.
    await job.retry();
    const again = await l.settle(job);
    expect(again.failedReason).toContain(TIER_SUFFIX.destructive);
    expect(t.runs()).toBe(1);
    expect(await processor.breaker.removal('acme', ids.runId, 'drop_table')).toBe('drop_table was removed after a destructive failure.');
    expect(await l.redis.hget(processor.breaker.redisKey('acme', ids.runId), 'drop_table:failures')).toBe('1');
  });
});

describe('circuit breaker', () => {
  it(`removes a tool after ${MAX_TOOL_FAILURES} failures in a run; later calls never execute`, async () => {
    const l = await lane();
    const t = flakyTool('flaky', () => new Error('nope'));
    l.worker({ tools: [t.tool] });
    const ids = { runId: 'run-breaker' };
    const outcomes: string[] = [];
    for (let n = 1; n <= MAX_TOOL_FAILURES + 2; n++) {
      const job = await l.run(jobData([call('flaky', { n })], ids), { attempts: 1 });
      outcomes.push(results(job)[0]!.outcome);
      if (n === MAX_TOOL_FAILURES) expect(results(job)[0]!.content).toContain(REJECTION_REMOVAL_SUFFIX);
    }
    expect(outcomes).toEqual([...Array(MAX_TOOL_FAILURES).fill('failed'), 'rejected', 'rejected']);
    expect(t.runs()).toBe(MAX_TOOL_FAILURES);
  });

  it('does not count a never-started failure whose service was unreachable: more of them than the limit leave the tool in place', async () => {
    const l = await lane();
    const t = flakyTool('remote', (n) =>
      n <= MAX_TOOL_FAILURES + 2 ? new NeverStartedError('connection refused', { unreachable: true }) : undefined,
    );
    const { processor } = l.worker({ tools: [t.tool] });
    const data = jobData([call('remote', { n: 1 })]);
    const job = await l.run(data, { attempts: MAX_TOOL_FAILURES + 4 });
    expect(results(job)[0]).toMatchObject({ outcome: 'executed', content: `ok after ${MAX_TOOL_FAILURES + 3}` });
    expect(t.runs()).toBe(MAX_TOOL_FAILURES + 3);
    expect(await processor.breaker.removal(data.tenantId, data.runId, 'remote')).toBeNull();
    const counters = await l.redis.hgetall(processor.breaker.redisKey(data.tenantId, data.runId));
    expect(counters['remote:failures']).toBeUndefined();
    // Without `unreachable`, the same failures remove the tool.
    const plain = flakyTool('remote_plain', () => new NeverStartedError('rate limited before sending'));
    const l2 = await lane();
    const other = l2.worker({ tools: [plain.tool] });
    const again = jobData([call('remote_plain', { n: 1 })]);
    const removed = await l2.run(again, { attempts: MAX_TOOL_FAILURES + 4 });
    expect(results(removed)[0]!.content).toContain(REJECTION_REMOVAL_SUFFIX);
    expect(plain.runs()).toBe(MAX_TOOL_FAILURES);
    expect(await other.processor.breaker.removal(again.tenantId, again.runId, 'remote_plain')).not.toBeNull();
  });

  it(`removes a tool after ${MAX_TOOL_REJECTIONS} consecutive refusals; a success resets the streak`, async () => {
    const l = await lane();
    let runs = 0;
    const wipe = defineTool({
      name: 'wipe_disk',
      input: z.object({ device: z.string().regex(/^sd[a-z]$/) }),
      effect: 'opaque',
      destructive: true,
      execute: () => `wiped ${++runs}`,
    });
    const { processor } = l.worker({ tools: [wipe] });
    const ids = { runId: 'run-refusals' };
    const refuse = async () => results(await l.run(jobData([call('wipe_disk', { device: 42 })], ids)))[0]!;
    for (let i = 0; i < MAX_TOOL_REJECTIONS - 1; i++) expect((await refuse()).outcome).toBe('rejected');
    // A success in between resets the streak...
    expect(results(await l.run(jobData([call('wipe_disk', { device: 'sdb' })], ids)))[0]!.outcome).toBe('executed');
    for (let i = 0; i < MAX_TOOL_REJECTIONS - 1; i++) await refuse();
    expect(await processor.breaker.removal('acme', ids.runId, 'wipe_disk')).toBeNull();
    // ...and the fifth refusal in a row removes the tool.
    const fifth = await refuse();
    expect(fifth.content).toContain(REJECTION_REMOVAL_SUFFIX);
    expect(await processor.breaker.removal('acme', ids.runId, 'wipe_disk')).not.toBeNull();
    const valid = results(await l.run(jobData([call('wipe_disk', { device: 'sdc' })], ids)))[0]!;
    expect(valid.outcome).toBe('rejected');
    expect(runs).toBe(1);
  });

  it(`counts a tool's own refusals as a streak: ${MAX_TOOL_REJECTIONS} in a row remove it, a success in between resets it, never a failure`, async () => {
    const l = await lane();
    let runs = 0;
    const lookup = defineTool({
      name: 'lookup_order',
      input: z.object({ id: z.number() }),
      effect: 'opaque',
      destructive: false,
      execute: (args) => {
        runs++;
        if (args.id < 0) throw new ToolRefusedError(`order ${args.id} is not yours to read`);
        return `order ${args.id}`;
      },
    });
    const { processor } = l.worker({ tools: [lookup] });
    const ids = { runId: 'run-refused' };
    let n = 0;
    const ask = async (id: number) => results(await l.run(jobData([call('lookup_order', { id: id * ++n })], ids), { attempts: 3 }))[0]!;
    for (let i = 0; i < MAX_TOOL_REJECTIONS - 1; i++) expect(await ask(-1)).toMatchObject({ outcome: 'rejected', is_error: true });
    // A success in between ends the streak...
    expect((await ask(1)).outcome).toBe('executed');
    for (let i = 0; i < MAX_TOOL_REJECTIONS - 1; i++) expect((await ask(-1)).content).not.toContain(REJECTION_REMOVAL_SUFFIX);
    expect(await processor.breaker.removal('acme', ids.runId, 'lookup_order')).toBeNull();
    const fields = await l.redis.hgetall(processor.breaker.redisKey('acme', ids.runId));
    expect(fields['lookup_order:failures']).toBeUndefined(); // refusals are never failures
    // ...and the fifth refusal in a row removes the tool.
    const fifth = await ask(-1);
    expect(fifth).toMatchObject({ outcome: 'rejected', is_error: true });
    expect(fifth.content).toContain('is not yours to read');
    expect(fifth.content).toContain(REJECTION_REMOVAL_SUFFIX);
    expect((await ask(1)).outcome).toBe('rejected');
    expect(runs).toBe(2 * MAX_TOOL_REJECTIONS);
  });

  it('keeps counters readable in the run slot', async () => {
    const l = await lane();
    const t = flakyTool('flaky', () => new Error('nope'));
    l.worker({ tools: [t.tool] });
    await l.run(jobData([call('flaky', { n: 1 })], { runId: 'run-counters' }), { attempts: 1 });
    const breaker = new BreakerStore({ redis: l.redis, prefix: l.prefix });
    const fields = await l.redis.hgetall(breaker.redisKey('acme', 'run-counters'));
    expect(fields['flaky:failures']).toBe('1');
    expect(new ReceiptStore({ redis: l.redis, prefix: l.prefix }).prefix).toBe(l.prefix);
  });
});
