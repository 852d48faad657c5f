/**
 * Approvals as the operators' tools (the CLI's `approve`/`deny`, the
 * console's "Needs approval") handle them: what an approver is shown, and a
 * decision that reads the pending approval for what the caller left out and
 * promotes the parked job once it is written.
 */
import { Job } from 'bullmq';
import { toolCallArgsHash } from '../core/identity.js';
import { approveCall, denyCall } from '../approvals/decide.js';
import { ApprovalExpiredError, ApprovalNotPendingError } from '../approvals/errors.js';
import { openJobQueue } from '../approvals/parked-job.js';
import { readApproval } from '../approvals/read.js';
import type { ApprovalDecided, DecideApprovalInput, PendingApproval } from '../approvals/types.js';
import { receiptsConnection, type RedisConnection } from '../redis/connection/connection.js';
import { toolJobDataSchema } from '../bullmq/job-data.js';

/** What an approver is shown of a call's arguments. */
export type ShownArguments =
  /** What the tool's `redact(args)` hook returned (kept on the receipt). */
  | { readonly from: 'redacted'; readonly value: unknown }
  /**
   * The call's input in the data of its parked job. `checked` when its
   * digest is the receipt's; otherwise it is the job's only call of that
   * tool (workers with a digest secret, or that repaired the input, hash
   * what this cannot recompute).
   */
  | { readonly from: 'job'; readonly value: unknown; readonly callId: string; readonly checked: boolean }
  /** Nothing to show, and why. */
  | { readonly from: 'none'; readonly why: string };

/** Whether a read approval is still pending (not decided, not expired). */
export const isPending = (read: Awaited<ReturnType<typeof readApproval>>): read is PendingApproval =>
  read !== undefined && !('decision' in read);

/**
 * What the approver of `pending` is shown: the redacted view when the tool
 * has a `redact` hook, else the call's arguments read from its parked job
 * (on `redis`, which must reach the queue's Redis), else why there is none.
 */
export async function shownArguments(redis: RedisConnection, pending: PendingApproval): Promise<ShownArguments> {
  if ('shown' in pending) return { from: 'redacted', value: pending.shown };
  const where = pending.job;
  if (where === undefined) return { from: 'none', why: 'the tool has no redact hook and the receipt records no job' };
  const opened = await openJobQueue(redis, where).catch(() => undefined);
  if (opened === undefined)
    return { from: 'none', why: 'the job cannot be read through this connection (a node-redis cluster or sentinel)' };
  try {
    const job = await Job.fromId(opened.queue, where.id).catch(() => undefined);
    const data = toolJobDataSchema.safeParse(job?.data);
    if (!data.success) return { from: 'none', why: `job ${where.id} of queue ${where.queue} is gone or holds no tool calls` };
    const calls = data.data.calls.filter((c) => c.name === pending.toolName);
    for (const call of calls) {
      const digest = await toolCallArgsHash(call.input).catch(() => '');
      if (digest === pending.argsHash) return { from: 'job', value: call.input, callId: call.id, checked: true };
    }
    const [only] = calls;
    if (calls.length === 1 && only) return { from: 'job', value: only.input, callId: only.id, checked: false };
    return { from: 'none', why: `job ${where.id} holds ${calls.length} calls of ${pending.toolName} and none has this digest` };
  } finally {
    await opened.close();
  }
}

/** What an operator's decision takes: the fence may be left out, and is then read from the pending approval. */
export type OperatorDecision = Omit<DecideApprovalInput, 'epoch' | 'argsHash' | 'queue'> & {
  readonly epoch?: string;
  readonly argsHash?: string;
};

/** What {@link decideAsOperator} did: the decision, and the fence it named (read when not given). */
export interface OperatorDecided {
  readonly decided: ApprovalDecided;
  readonly epoch: string;
  readonly argsHash: string;
  /** Whether the epoch and digest were read from the pending approval rather than given. */
  readonly fenceRead: boolean;
}

/**
 * Approves or denies as an operator: the fence (epoch, arguments digest) as
 * given, else as the pending approval reads now; the decision script then
 * refuses a stale one with its typed error, nothing written. Once written,
 * the decision promotes the parked job through the queue the receipt
 * records (see `approveCall`). A call that is not pending and no fence given is refused
 * here with the same typed errors ({@link ApprovalNotPendingError} naming
 * who decided, {@link ApprovalExpiredError}).
 */
export async function decideAsOperator(verb: 'approve' | 'deny', input: OperatorDecision): Promise<OperatorDecided> {
  const read = await readApproval(input);
  const pending = isPending(read) ? read : undefined;
  const epoch = input.epoch ?? pending?.epoch;
  const argsHash = input.argsHash ?? pending?.argsHash;
  if (epoch === undefined || argsHash === undefined) throw await notPending(input.redis, input.receiptKey, read);
  const decide = verb === 'approve' ? approveCall : denyCall;
  const decided = await decide({ ...input, epoch, argsHash });
  return { decided, epoch, argsHash, fenceRead: input.epoch === undefined || input.argsHash === undefined };
}

async function notPending(redis: RedisConnection, receiptKey: string, read: Awaited<ReturnType<typeof readApproval>>): Promise<Error> {
  if (read !== undefined && 'decision' in read) {
    if (read.actor === 'expiry') return new ApprovalExpiredError(receiptKey, read.atMs);
    return new ApprovalNotPendingError(receiptKey, read.status, read.actor, read.decision);
  }
  const status = await receiptsConnection(redis).command('HGET', [receiptKey, 'status'], receiptKey);
  return new ApprovalNotPendingError(receiptKey, status === null || status === undefined ? '' : String(status));
}
