/**
 * A person's decision on a call awaiting approval: the fenced script, the
 * audit entry, the index, and the promotion of the parked job.
 */
import { InvalidReceiptInputError, UnexpectedScriptReplyError } from '../redis/errors.js';
import { AuditLog } from '../redis/operators/audit-log.js';
import type { OptionsSchema } from '../core/options.js';
import { ReceiptsChannel } from '../redis/receipts/channel.js';
import { connectionOption, KEYSPACE_OPTION_RULES } from '../redis/options.js';
import { ApprovalArgsMismatchError, ApprovalExpiredError, ApprovalNotPendingError, ApprovalStaleError } from './errors.js';
import { approvalScriptKeys, pendingApprovalsRedisKey } from './keys.js';
import { openJobQueue, PARKED_DELIVERY_UNWIND_MS, type OpenedJobQueue } from './parked-job.js';
import { jobIdOf } from './read.js';
import type { ApprovalDecided, DecideApprovalInput } from './types.js';

/** Longest actor name kept. */
export const APPROVAL_ACTOR_MAX = 200;
/** Longest note kept. */
export const APPROVAL_NOTE_MAX = 1000;

/**
 * Approve a call awaiting approval: its parked job is promoted and runs it,
 * once (through `queue` when given, else through the queue the approval
 * recorded, on `redis`). Refused with nothing written (typed errors
 * {@link ApprovalNotPendingError}, naming who decided when somebody did,
 * {@link ApprovalStaleError}, {@link ApprovalArgsMismatchError},
 * {@link ApprovalExpiredError}) unless the receipt awaits approval, in the
 * lifetime and for the arguments named, and has not expired. Of two racing
 * decisions exactly one is written.
 */
export function approveCall(input: DecideApprovalInput): Promise<ApprovalDecided> {
  return decide(input, 'approve');
}

/**
 * Deny a call awaiting approval: it is never run; the model reads who denied
 * it and why. Refused as {@link approveCall} is.
 */
export function denyCall(input: DecideApprovalInput): Promise<ApprovalDecided> {
  return decide(input, 'deny');
}

function checkInput(input: DecideApprovalInput): void {
  const text = (value: unknown, what: string, max: number, required: boolean) => {
    if (value === undefined && !required) return;
    if (typeof value !== 'string' || (required && value.trim() === '') || value.length > max) {
      throw new InvalidReceiptInputError(`${what} must be a ${required ? 'non-blank ' : ''}string of at most ${max} characters`);
    }
  };
  text(input.actor, 'actor', APPROVAL_ACTOR_MAX, true);
  text(input.note, 'note', APPROVAL_NOTE_MAX, false);
  text(input.epoch, 'epoch', 200, true);
  text(input.argsHash, 'argsHash', 200, true);
  if (input.source !== undefined && !['cli', 'console', 'code'].includes(input.source)) {
    throw new InvalidReceiptInputError(`source must be 'cli', 'console' or 'code'`);
  }
}

/** The options of a decision that make its channel to Redis, as a keyspace checks them. */
type DecisionChannelOptions = Pick<DecideApprovalInput, 'redis' | 'prefix' | 'retentionMs' | 'durability' | 'commandTimeoutMs'>;

const DECISION_CHANNEL_SCHEMA: OptionsSchema<DecisionChannelOptions> = {
  redis: connectionOption,
  prefix: KEYSPACE_OPTION_RULES.prefix,
  retentionMs: KEYSPACE_OPTION_RULES.retentionMs,
  durability: KEYSPACE_OPTION_RULES.durability,
  commandTimeoutMs: KEYSPACE_OPTION_RULES.commandTimeoutMs,
};

/** The channel a decision writes through: its errors typed as a claim's, its write as durable as the workers' (with `durability`). */
function decisionChannel(input: DecideApprovalInput, verb: 'approve' | 'deny'): ReceiptsChannel {
  const { redis, prefix, retentionMs, durability, commandTimeoutMs } = input;
  const options: DecisionChannelOptions = { redis, prefix, retentionMs, durability, commandTimeoutMs };
  for (const name of Object.keys(options) as (keyof DecisionChannelOptions)[]) if (options[name] === undefined) delete options[name];
  return ReceiptsChannel.of(options, verb === 'approve' ? 'approveCall' : 'denyCall', DECISION_CHANNEL_SCHEMA);
}

async function decide(input: DecideApprovalInput, verb: 'approve' | 'deny'): Promise<ApprovalDecided> {
  checkInput(input);
  const channel = decisionChannel(input, verb);
  const prefix = channel.settings.prefix;
  const keys = approvalScriptKeys(prefix, input.receiptKey);
  const source = input.source ?? 'code';
  // As a durable write (`ReceiptsChannel.write`), but the acknowledgement is awaited after the decision's
  // follow-ups below, which run either way: the primary holds the decision, which its job (promoted) finds.
  await channel.durability?.ready(keys[0]);
  const reply = await channel.call('decide-approval', keys, [
    input.epoch,
    input.argsHash,
    verb,
    input.actor,
    input.note ?? '',
    source,
    channel.settings.retentionMs,
  ]);
  const mark = channel.durability?.mark(keys[0]);
  if (!Array.isArray(reply)) throw new UnexpectedScriptReplyError('decide-approval', reply);
  const [answer, ...rest] = reply.map((v) => (typeof v === 'number' ? v : String(v)));
  if (answer === 'refused') throw refusal(input.receiptKey, rest);
  if (answer !== 'ok') throw new UnexpectedScriptReplyError('decide-approval', reply);
  const decision = rest[0] === 'approved' ? 'approved' : 'denied';
  const atMs = Number(rest[1]);
  const decided: ApprovalDecided = {
    receiptKey: input.receiptKey,
    decision,
    actor: input.actor,
    atMs,
    ...(input.note ? { note: input.note } : {}),
  };
  // After the decision is written: each of these may fail without undoing it (the receipt is the truth).
  await channel
    .command('ZREM', [pendingApprovalsRedisKey(prefix), input.receiptKey], pendingApprovalsRedisKey(prefix))
    .catch(() => undefined);
  await new AuditLog(channel.redis, prefix).append({
    actor: input.actor,
    source,
    action: verb,
    receipts: [input.receiptKey],
    detail: { decision, epoch: input.epoch, argsHash: input.argsHash, ...(input.note ? { note: input.note } : {}) },
  });
  await promote(input, String(rest[2] ?? ''));
  // Short of it, the caller learns the decision may not outlive a failover (retried, it is refused as made).
  if (channel.durability !== undefined) await channel.durability.require('approvalDecision', keys[0], mark);
  return decided;
}

function refusal(receiptKey: string, rest: readonly (string | number)[]): Error {
  const [why, status, by, decision, , , expires] = rest.map(String);
  switch (why) {
    case 'stale_lifetime':
      return new ApprovalStaleError(receiptKey);
    case 'args_mismatch':
      return new ApprovalArgsMismatchError(receiptKey);
    case 'expired':
      return new ApprovalExpiredError(receiptKey, Number(expires));
    default:
      return new ApprovalNotPendingError(
        receiptKey,
        status ?? '',
        by || undefined,
        decision === 'approved' || decision === 'denied' ? decision : undefined,
      );
  }
}

/**
 * Promotes the parked job so it runs a quarter second on (its parked
 * delivery unwound by then): through `input.queue` when given
 * (and it is the job's queue), else through a queue opened on the receipts'
 * connection from where the approval recorded the job. A job that cannot be
 * promoted (gone, promoted meanwhile, its queue on another Redis) still
 * wakes when the approval would have expired.
 */
async function promote(input: DecideApprovalInput, jobText: string): Promise<void> {
  const { job } = jobIdOf(jobText === '' ? undefined : jobText);
  if (job === undefined) return;
  let opened: OpenedJobQueue | undefined;
  try {
    if (input.queue !== undefined && input.queue.name !== job.queue) return;
    opened = input.queue === undefined ? await openJobQueue(input.redis, job) : undefined;
    const queue = input.queue ?? opened?.queue;
    // Not at once: the job may have been parked a moment ago, its parked delivery still unwinding.
    await new Promise((resolve) => setTimeout(resolve, PARKED_DELIVERY_UNWIND_MS));
    const parked = await queue?.getJob(job.id);
    if (parked && (await parked.isDelayed())) await parked.promote();
  } catch {
    // Promoted meanwhile by another, or the queue is away: the job still wakes when the approval would expire.
  } finally {
    await opened?.close();
  }
}
