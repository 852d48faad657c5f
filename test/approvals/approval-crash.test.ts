/**
 * Approvals with real worker processes SIGKILLed around the approved call,
 * and two approver processes racing: one approval, one execution, whatever
 * the queue redelivers.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { ToolJobResult } from '../../src/bullmq/index.js';
import { approveCall, listPendingApprovals, type PendingApproval } from '../../src/approvals/index.js';
import { AuditLog } from '../../src/redis/operators/audit-log.js';
import { duplicateEffects } from '../../examples/outbox-tools.js';
import {
  emailJob,
  expectCompleted,
  expectUnrecoverablyAmbiguous,
  killAndTakeOver,
  outboxOf,
  reached,
  STEP_TIMEOUT_MS,
} from '../bullmq/crash-support.js';
import { RETRYING, useLanes, type Lane } from '../bullmq/fixture.js';

const lane = useLanes({ queues: 'redis' });
const APPROVAL = { APPROVAL_TOOLS: 'send_email' };
const run = promisify(execFile);
const approveOnce = fileURLToPath(new URL('../fixtures/approve-once.ts', import.meta.url));

/** Waits until a call is listed as pending (another lifetime than `before`, when given), and returns it. */
async function pendingOf(l: Lane, before?: string): Promise<PendingApproval> {
  const until = Date.now() + STEP_TIMEOUT_MS;
  for (;;) {
    const [pending] = await listPendingApprovals({ redis: l.redis, prefix: l.prefix });
    if (pending && pending.epoch !== before) return pending;
    if (Date.now() > until) throw new Error('no call became pending');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('a worker SIGKILLed around an approved call', () => {
  it('after the approval, before the claim: the next delivery runs the call exactly once', async () => {
    const l = await lane();
    const first = await l.spawn({ ...APPROVAL, CRASH_AT: 'after-approval' });
    const job = await l.add(emailJob(), RETRYING);
    const pending = await pendingOf(l);
    expect(await outboxOf(l)).toEqual([]);
    await approveCall({ redis: l.redis, prefix: l.prefix, ...pending, actor: 'ana', queue: l.queue });
    await first.waitFor(reached('after-approval'), STEP_TIMEOUT_MS);
    // Frozen before its claim: the receipt is still approved, not started.
    expect(await l.redis.hget(pending.receiptKey, 'status')).toBe('approved');

    const takeover = await killAndTakeOver(l, first, APPROVAL);
    const done = await expectCompleted(l, job);
    expect((done.returnvalue as ToolJobResult).results.map((r) => r.outcome)).toEqual(['executed']);
    const outbox = await outboxOf(l);
    expect(outbox.map((e) => [e.tool, e.attempt, e.pid])).toEqual([['send_email', 1, takeover.child.pid]]);
    expect(duplicateEffects(outbox)).toEqual([]);
    expect(await l.receipt(pending.tenantId, pending.runId)).toMatchObject({ status: 'completed', attempts: 1 });
  });

  it('the receipt expires between the gate and the claim: the claim starts nothing, and the call runs only once approved again', async () => {
    const l = await lane();
    // The job lock outlives the stall, so the stalled delivery itself goes on to its claim.
    const worker = await l.spawn({ ...APPROVAL, CRASH_AT: 'pause-after-approval', PAUSE_MS: '3000', LOCK_MS: '15000' });
    const job = await l.add(emailJob(), RETRYING);
    const first = await pendingOf(l);
    await approveCall({ redis: l.redis, prefix: l.prefix, ...first, actor: 'ana', queue: l.queue });
    await worker.waitFor(reached('pause-after-approval'), STEP_TIMEOUT_MS);
    // Stalled after its gate found the call approved: the receipt's retention passes meanwhile.
    await l.redis.pexpire(first.receiptKey, 1);
    for (let tries = 0; (await l.redis.exists(first.receiptKey)) === 1 && tries < 100; tries++) await new Promise((r) => setTimeout(r, 10));
    expect(await l.redis.exists(first.receiptKey)).toBe(0);

    // The claim refuses a lifetime nobody approved; the gate asks again, and nothing runs meanwhile.
    const second = await pendingOf(l, first.epoch);
    expect(second.receiptKey).toBe(first.receiptKey);
    expect(await l.redis.hget(second.receiptKey, 'status')).toBe('awaiting_approval');
    expect(await outboxOf(l)).toEqual([]);

    await approveCall({ redis: l.redis, prefix: l.prefix, ...second, actor: 'bo', queue: l.queue });
    const done = await expectCompleted(l, job);
    expect((done.returnvalue as ToolJobResult).results.map((r) => r.outcome)).toEqual(['executed']);
    expect((await outboxOf(l)).map((e) => e.tool)).toEqual(['send_email']);
    expect(await l.redis.hget(second.receiptKey, 'approval_by')).toBe('bo');
  });

  it('mid-call: the opaque call becomes ambiguous and is never run again', async () => {
    const l = await lane();
    const first = await l.spawn({ ...APPROVAL, CRASH_AT: 'before-effect' });
    const job = await l.add(emailJob(), RETRYING);
    const pending = await pendingOf(l);
    await approveCall({ redis: l.redis, prefix: l.prefix, ...pending, actor: 'ana', queue: l.queue });
    await first.waitFor(reached('before-effect'), STEP_TIMEOUT_MS);

    const takeover = await killAndTakeOver(l, first, APPROVAL);
    await expectUnrecoverablyAmbiguous(l, job, takeover);
    expect(await outboxOf(l)).toEqual([]);
    expect(await l.redis.hget(pending.receiptKey, 'approval_decision')).toBe('approved');
  });
});

describe('two approvers racing', () => {
  it('the call runs once, one approval is recorded, the other is refused naming the winner', async () => {
    const l = await lane();
    const worker = await l.spawn(APPROVAL);
    const job = await l.add(emailJob(), RETRYING);
    const pending = await pendingOf(l);
    const env = {
      ...process.env,
      REDIS_URL: l.redisUrl,
      PREFIX: l.prefix,
      RECEIPT_KEY: pending.receiptKey,
      EPOCH: pending.epoch,
      ARGS_HASH: pending.argsHash,
      // Both processes start (tsx takes a few seconds), then fire at the same instant.
      START_AT: String(Date.now() + 8_000),
    };
    const approver = (actor: string) =>
      run(process.execPath, ['--import', 'tsx', approveOnce], { env: { ...env, ACTOR: actor }, timeout: 60_000 }).then(
        ({ stdout }) => JSON.parse(stdout) as { decided?: { actor: string }; refused?: { code: string; decidedBy?: string } },
      );
    const answers = await Promise.all([approver('ana'), approver('bo')]);
    const winners = answers.filter((a) => a.decided);
    const losers = answers.filter((a) => a.refused);
    expect(winners).toHaveLength(1);
    expect(losers).toHaveLength(1);
    const winner = winners[0]!.decided!.actor;
    expect(losers[0]!.refused).toEqual({ code: 'approval.not_pending', decidedBy: winner, decision: 'approved' });

    // Nobody promoted the job (no queue was given): it wakes at the expiry, so promote it here as a console would.
    await (await l.queue.getJob(job.id!))?.promote().catch(() => undefined);
    await expectCompleted(l, job);
    const outbox = await outboxOf(l);
    expect(outbox.map((e) => e.tool)).toEqual(['send_email']);
    const audit = await new AuditLog(l.redis, l.prefix).read();
    expect(audit.map((a) => [a.action, a.actor])).toEqual([['approve', winner]]);
    const history = await l.store.history({ ...pending });
    expect(history.filter((h) => h.what === 'approval.approved').map((h) => h.by)).toEqual([winner]);
    expect(worker.child.exitCode).toBeNull();
  });
});
