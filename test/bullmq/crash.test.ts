/**
 * Crash acceptance tests: a real worker process is SIGKILLed at a chosen
 * point of a tool call, and a second worker process picks the stalled job up
 * through BullMQ's own stalled-job recovery. Nothing is mocked: real Queues,
 * real Workers, the harness's Redis, and an outbox of landed side effects.
 *
 * Every wait is on observable state (IPC messages, job state, receipt
 * fields); leases and locks are short so recovery takes seconds.
 */
import { describe, expect, it } from 'vitest';
import type { ToolJobResult } from '../../src/bullmq/index.js';
import { duplicateEffects, providerDeduped } from '../../examples/outbox-tools.js';
import {
  ambiguousReceipt,
  emailJob,
  expectCompleted,
  expectExecutedByTakeover,
  expectUnrecoverablyAmbiguous,
  frozenAt,
  killAndTakeOver,
  outboxOf,
  STEP_TIMEOUT_MS,
  ticketJob,
} from './crash-support.js';
import { decisionsOf, decisionTrail, useLanes } from './fixture.js';

const lane = useLanes();

describe('a worker SIGKILLed after claim, before the effect', () => {
  it('opaque send_email: the takeover finds it ambiguous, fails the job unrecoverably, sends nothing', async () => {
    const { l, first, data, job } = await frozenAt(lane, 'before-effect', emailJob);
    expect(decisionTrail(first)).toEqual(['execute@1']);
    const receiptKey = decisionsOf(first)[0]!.receiptKey;

    const takeover = await killAndTakeOver(l, first);
    await expectUnrecoverablyAmbiguous(l, job, takeover);

    expect(await outboxOf(l)).toEqual([]);
    await ambiguousReceipt(l, data.tenantId, data.runId, receiptKey);
  });

  it('resumable create_ticket: attempt 2 takes over and runs every step exactly once', async () => {
    const { l, first, data, job } = await frozenAt(lane, 'before-effect', ticketJob);
    expect(decisionTrail(first)).toEqual(['execute@1']);

    const takeover = await killAndTakeOver(l, first);
    await expectExecutedByTakeover(l, job, takeover);

    const outbox = await outboxOf(l);
    expect(outbox.map((e) => [e.part, e.attempt, e.pid])).toEqual([
      ['reserve', 2, takeover.child.pid],
      ['create', 2, takeover.child.pid],
      ['notify', 2, takeover.child.pid],
    ]);
    expect(duplicateEffects(outbox)).toEqual([]);
    expect(await providerDeduped(l.redis, l.prefix)).toEqual({});
    const record = await l.receipt(data.tenantId, data.runId);
    expect(record).toMatchObject({ status: 'completed', attempts: 2, ambiguousMs: null });
    expect(Object.keys(record.steps).sort()).toEqual(['create', 'notify', 'reserve']);
  });
});

describe('a worker SIGKILLed after the effect landed, before the receipt completed', () => {
  it('opaque send_email: ambiguous, failed unrecoverably, flagged, and the email is never re-sent', async () => {
    const { l, first, data, job } = await frozenAt(lane, 'after-effect:send', emailJob);
    const receiptKey = decisionsOf(first)[0]!.receiptKey;
    expect(await outboxOf(l)).toHaveLength(1);

    const takeover = await killAndTakeOver(l, first);
    await expectUnrecoverablyAmbiguous(l, job, takeover);

    const outbox = await outboxOf(l);
    expect(outbox.map((e) => [e.tool, e.part, e.attempt, e.pid])).toEqual([['send_email', 'send', 1, first.child.pid]]);
    await ambiguousReceipt(l, data.tenantId, data.runId, receiptKey);
  });

  it('resumable create_ticket killed after `create` landed: attempt 2 skips reserve, the provider absorbs create, notify lands once', async () => {
    const { l, first, data, job } = await frozenAt(lane, 'after-effect:create', ticketJob);
    // What the crash leaves: reserve landed and recorded, create landed but not recorded.
    const before = await l.receipt(data.tenantId, data.runId);
    expect(Object.keys(before.steps)).toEqual(['reserve']);
    expect((await outboxOf(l)).map((e) => e.part)).toEqual(['reserve', 'create']);

    const takeover = await killAndTakeOver(l, first);
    const done = await expectExecutedByTakeover(l, job, takeover);

    const outbox = await outboxOf(l);
    expect(outbox.map((e) => [e.part, e.attempt])).toEqual([
      ['reserve', 1],
      ['create', 1],
      ['notify', 2],
    ]);
    expect(outbox.filter((e) => e.part === 'reserve' && e.attempt === 2)).toEqual([]);
    const deduped = await providerDeduped(l.redis, l.prefix);
    expect(deduped.reserve).toBeUndefined();
    expect(deduped.create).toBe(1);
    expect(deduped.notify).toBeUndefined();
    expect(duplicateEffects(outbox)).toEqual([]);

    const record = await l.receipt(data.tenantId, data.runId);
    expect(record).toMatchObject({ status: 'completed', attempts: 2 });
    // reserve's recorded value is the one attempt 1 returned: the same ticket id, carried over.
    expect(record.steps.reserve).toBe(before.steps.reserve);
    expect(Object.keys(record.steps).sort()).toEqual(['create', 'notify', 'reserve']);
    const ticket = JSON.parse((done.returnvalue as ToolJobResult).results[0]!.content) as { ticket: string };
    expect(ticket.ticket).toBe(before.steps.reserve);
  });
});

describe('a worker SIGKILLed after the receipt completed, before the job finished', () => {
  it.each([
    ['send_email', emailJob],
    ['create_ticket', ticketJob],
  ])('%s: the redelivered job replays the recorded result and nothing lands twice', async (_tool, makeJob) => {
    const { l, first, data, job } = await frozenAt(lane, 'after-complete', makeJob);
    const settled = await first.waitFor((m) => m.type === 'settled', STEP_TIMEOUT_MS);
    expect(settled.event).toMatchObject({ attempt: 1, outcome: 'executed' });
    const completed = await l.receipt(data.tenantId, data.runId);
    expect(completed).toMatchObject({ status: 'completed', attempts: 1 });
    const landed = await outboxOf(l);
    expect(await job.getState()).toBe('active');

    const takeover = await killAndTakeOver(l, first);
    const done = await expectCompleted(l, job);
    await takeover.waitFor((m) => m.type === 'decision', STEP_TIMEOUT_MS);
    expect(decisionTrail(takeover)).toEqual(['replay']);
    const [result] = (done.returnvalue as ToolJobResult).results;
    expect(result).toMatchObject({ outcome: 'replayed', tool_use_id: data.calls[0]!.id });
    expect(result!.content).toBe((completed.result as { content: string }).content);

    const outbox = await outboxOf(l);
    expect(outbox).toEqual(landed);
    expect(outbox.length).toBe(data.calls[0]!.name === 'send_email' ? 1 : 3);
    expect(outbox.every((e) => e.attempt === 1 && e.pid === first.child.pid)).toBe(true);
    expect(duplicateEffects(outbox)).toEqual([]);
    expect(await l.receipt(data.tenantId, data.runId)).toMatchObject({ status: 'completed', attempts: 1 });
  });
});
