/**
 * The crash acceptance tests with BullMQ's queue on PostgreSQL (BullMQ 6's
 * `createPostgresBackend`) and the receipts on Redis: a real worker process
 * is SIGKILLed at a chosen point of a tool call, and a second one picks the
 * stalled job up through the PostgreSQL backend's own stalled-job recovery.
 * The PostgreSQL cluster is a throwaway one the harness starts (initdb,
 * pg_ctl on a free port); nothing is mocked.
 */
import { describe, expect, it } from 'vitest';
import { duplicateEffects, providerDeduped } from '../../examples/outbox-tools.js';
import {
  ambiguousReceipt,
  emailJob,
  expectExecutedByTakeover,
  expectUnrecoverablyAmbiguous,
  frozenAt,
  killAndTakeOver,
  outboxOf,
  ticketJob,
} from './crash-support.js';
import { decisionsOf, decisionTrail, useLanes } from './fixture.js';
import { postgresSkipReason } from '../support/postgres.js';

const skip = postgresSkipReason();
if (skip) console.warn(`[postgres harness] skipping the PostgreSQL crash tests: ${skip}`);

describe.skipIf(skip !== undefined)('a PostgreSQL-backed queue with receipts on Redis, a worker SIGKILLed mid-call', () => {
  const lane = useLanes({ queues: 'postgres' });

  it('opaque send_email killed before the effect: the takeover finds it ambiguous, fails the job unrecoverably, sends nothing', async () => {
    const { l, first, data, job } = await frozenAt(lane, 'before-effect', emailJob);
    expect(decisionTrail(first)).toEqual(['execute@1']);
    const receiptKey = decisionsOf(first)[0]!.receiptKey;

    const takeover = await killAndTakeOver(l, first);
    await expectUnrecoverablyAmbiguous(l, job, takeover);

    expect(await outboxOf(l)).toEqual([]);
    await ambiguousReceipt(l, data.tenantId, data.runId, receiptKey);
  });

  it('opaque send_email killed after the email went out: ambiguous, failed unrecoverably, and never re-sent', async () => {
    const { l, first, data, job } = await frozenAt(lane, 'after-effect:send', emailJob);
    const receiptKey = decisionsOf(first)[0]!.receiptKey;
    expect(await outboxOf(l)).toHaveLength(1);

    const takeover = await killAndTakeOver(l, first);
    await expectUnrecoverablyAmbiguous(l, job, takeover);

    const outbox = await outboxOf(l);
    expect(outbox.map((e) => [e.tool, e.part, e.attempt, e.pid])).toEqual([['send_email', 'send', 1, first.child.pid]]);
    expect(duplicateEffects(outbox)).toEqual([]);
    await ambiguousReceipt(l, data.tenantId, data.runId, receiptKey);
  });

  it('resumable create_ticket killed after `create` landed: the takeover finishes it, each effect landing once', async () => {
    const { l, first, data, job } = await frozenAt(lane, 'after-effect:create', ticketJob);
    expect((await outboxOf(l)).map((e) => e.part)).toEqual(['reserve', 'create']);
    const takeover = await killAndTakeOver(l, first);
    await expectExecutedByTakeover(l, job, takeover);

    const outbox = await outboxOf(l);
    expect(outbox.map((e) => [e.part, e.attempt])).toEqual([
      ['reserve', 1],
      ['create', 1],
      ['notify', 2],
    ]);
    expect(duplicateEffects(outbox)).toEqual([]);
    // The provider's idempotency key absorbed the second create; nothing else reached it twice.
    expect(await providerDeduped(l.redis, l.prefix)).toEqual({ create: 1 });
    const record = await l.receipt(data.tenantId, data.runId);
    expect(record).toMatchObject({ status: 'completed', attempts: 2, ambiguousMs: null });
  });
});
