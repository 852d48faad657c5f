/**
 * What the four framework adapters share: a framework's tool call submitted
 * to the `withToolReceipts` workers through `/client` and its answer in the
 * words the model reads, and the approval of such a call asked for and
 * decided as the receipt's fenced decision.
 */
import type { Queue } from 'bullmq';
import type { AnyToolDefinition } from '../bullmq/tools/define-tool.js';
import { ambiguousText } from '../bullmq/outcomes/ambiguity.js';
import type { ToolCallOutcome, ToolResultBlock } from '../core/job-data.js';
import { canonicalJson } from '../core/canonical-json.js';
import { approvalNeeded } from '../approvals/gate.js';
import { approveCall, denyCall } from '../approvals/decide.js';
import { ApprovalNotPendingError } from '../approvals/errors.js';
import { readApproval } from '../approvals/read.js';
import type { RedisConnection } from '../redis/connection/connection.js';
import type { DurabilityOptions } from '../redis/durability/durability.js';
import type { ToolCallClient, ToolCallInput, TurnSubmission } from '../client/client.js';
import { AmbiguousTurnError, TurnConflictError, TurnFailedError } from '../client/errors.js';
import { conflictResult } from '../client/turn.js';
import { InvalidOptionsError } from '../core/options.js';
import { FrameworkApprovalRefusedError } from './errors.js';

/** Where a framework's tools send their calls: what every adapter takes. */
export interface FrameworkToolsOptions {
  /** The `/client` client of the queue the `withToolReceipts` workers take jobs from. */
  readonly client: ToolCallClient;
  readonly tenantId: string;
  readonly sessionId?: string;
  /** Wait limit per call, in ms (default: the client's). */
  readonly timeoutMs?: number;
  /** Needed by tools with an approval rule: where the decisions are written (see {@link FrameworkApprovals}). */
  readonly approvals?: FrameworkApprovals;
}

/**
 * How a decision made in the framework's shape reaches the receipt: the
 * receipts' Redis (the connection the workers write receipts through), and
 * the queue, so the parked job runs at once.
 */
export interface FrameworkApprovals {
  readonly redis: RedisConnection;
  /** Key prefix of the receipts; default `trc`. */
  readonly prefix?: string;
  /** The workers' queue: the approved job is promoted. Without it the job wakes when its approval would expire. */
  readonly queue?: Queue;
  /** Who decided, kept on the receipt and in the audit log, when the framework's decision names nobody. */
  readonly actor?: string;
  /**
   * The workers' `durability`: a decision is then acknowledged only once the
   * replicas (or the AOF) have it, as the workers' own writes are; without
   * it, a failover right after a denial could bring the call back pending.
   */
  readonly durability?: DurabilityOptions;
}

/** One call as a framework hands it to a tool. */
export interface FrameworkCall {
  /** The framework's name, for the sentences that name it. */
  readonly framework: string;
  readonly tool: AnyToolDefinition;
  readonly toolCallId: string;
  readonly input: unknown;
  readonly runId: string;
  /** The turn the call is submitted as: one call, one job. */
  readonly turnId: string;
  readonly signal?: AbortSignal;
}

/** A call's answer, as the model is to read it. */
export interface CallAnswer {
  /** The text the model reads. */
  readonly text: string;
  /** An error result: failed, refused, denied, or of unknown outcome. */
  readonly isError: boolean;
  readonly outcome: ToolCallOutcome;
}

/** A decision a person made in the framework's shape. */
export interface FrameworkDecision {
  readonly approved: boolean;
  readonly actor?: string;
  readonly note?: string;
  /** The receipt's lifetime and digest the person was shown, when the framework's shape carries them back. */
  readonly fence?: { readonly epoch: string; readonly argsHash: string };
}

/** A call awaiting approval, as a framework's request for a decision carries it. */
export interface ApprovalTicket {
  readonly toolCallId: string;
  readonly toolName: string;
  /** What `approveCall`, `tool-receipts approve` and the console name. */
  readonly receiptKey: string;
  /** The receipt's lifetime and the arguments' digest: a decision that carries them back is fenced on them. */
  readonly epoch: string;
  readonly argsHash: string;
  readonly reason?: string;
  /** When it counts as denied if nobody decides (ms, the Redis server's clock). */
  readonly expiresAtMs: number;
}

/** What asking for a call's approval came to. */
export type ApprovalAsked =
  | { readonly kind: 'awaiting'; readonly ticket: ApprovalTicket }
  /** No person is needed (anymore): the call was decided before, or the worker's rule asks for nobody. */
  | { readonly kind: 'answered'; readonly answer: CallAnswer };

/**
 * Whether the tool's own approval rule asks a person about this input, as
 * the worker's gate will: the input parsed by the tool's schema first (an
 * input the schema refuses is left to the worker, which repairs or refuses it).
 */
export function approvalAsked(options: FrameworkToolsOptions, call: FrameworkCall): boolean {
  const rule = call.tool.approval as Parameters<typeof approvalNeeded>[0];
  if (rule === undefined) return false;
  const parsed = call.tool.input.safeParse(call.input);
  if (!parsed.success) return false;
  const ctx = { tenantId: options.tenantId, runId: call.runId, toolName: call.tool.name, callId: call.toolCallId };
  return approvalNeeded(rule, parsed.data, ctx) !== undefined;
}

/** The turn a call is submitted as. */
function turnOf(options: FrameworkToolsOptions, call: FrameworkCall): TurnSubmission {
  return {
    tenantId: options.tenantId,
    runId: call.runId,
    turnId: call.turnId,
    ...(options.sessionId === undefined ? {} : { sessionId: options.sessionId }),
    calls: [{ id: call.toolCallId, name: call.tool.name, input: call.input }],
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(call.signal === undefined ? {} : { signal: call.signal }),
  };
}

const answerOf = (block: ToolResultBlock): CallAnswer => ({
  text: block.content,
  isError: block.is_error === true,
  outcome: block.outcome,
});

/**
 * Submit the call and wait for its result (or attach to the job of the same
 * turn, and get its result without running it again). An ambiguous call
 * comes back as the sentence the model reads for one (nothing was run
 * again), a call whose turn id names another call as the sentence saying it
 * was not run, a turn whose job failed for good (a destructive failure,
 * attempts used up) as its failure, the sentence the worker wrote; any
 * other end of the turn (a timeout, an abort) is thrown.
 */
export async function answerCall(options: FrameworkToolsOptions, call: FrameworkCall): Promise<CallAnswer> {
  try {
    const [block] = await options.client.submit({ ...turnOf(options, call), approvals: 'wait' });
    return answerOf(block!);
  } catch (error) {
    return answerFromError(error, call);
  }
}

/**
 * The answer the model reads for a turn that ended in `error`, when it is
 * one (ambiguous, a clash of ids, a job failed for good: its reason is the
 * worker's sentence, without the code BullMQ kept before it); else throws it.
 */
function answerFromError(error: unknown, call: FrameworkCall): CallAnswer {
  if (error instanceof AmbiguousTurnError) return { text: ambiguousText(call.tool.name), isError: true, outcome: 'ambiguous' };
  if (error instanceof TurnConflictError) return answerOf(conflictResult(call.toolCallId, call.tool.name));
  if (error instanceof TurnFailedError) {
    return { text: error.failedReason.replace(/^[a-z_]+(?:\.[a-z_]+)+: /, ''), isError: true, outcome: 'failed' };
  }
  throw error;
}

/**
 * Submit the call and return as soon as its job is parked for approval,
 * with the ticket a request for a decision carries; a call that needs no
 * person (decided before, or never asked about) gives its answer instead.
 */
export async function askApproval(options: FrameworkToolsOptions, call: FrameworkCall): Promise<ApprovalAsked> {
  const approvals = approvalsOf(options, call);
  let first;
  try {
    [first] = await options.client.submit({ ...turnOf(options, call), approvals: 'return' });
  } catch (error) {
    return { kind: 'answered', answer: answerFromError(error, call) };
  }
  if (first!.outcome === 'pending') throw new Error(`a one-call turn came back pending: ${first!.content}`);
  if (first!.outcome !== 'awaiting_approval') return { kind: 'answered', answer: answerOf(first as ToolResultBlock) };
  const { receiptKey, reason, expiresAtMs } = first!.approval;
  const pending = await readApproval({ redis: approvals.redis, receiptKey, ...(approvals.prefix ? { prefix: approvals.prefix } : {}) });
  const fence =
    pending !== undefined && 'epoch' in pending ? { epoch: pending.epoch, argsHash: pending.argsHash } : { epoch: '', argsHash: '' };
  const ticket = {
    toolCallId: call.toolCallId,
    toolName: call.tool.name,
    receiptKey,
    ...fence,
    ...(reason ? { reason } : {}),
    expiresAtMs,
  };
  return { kind: 'awaiting', ticket };
}

/**
 * Apply a person's decision, made in the framework's shape, to the call's
 * receipt, and give the call's answer. The decision must fit a call that
 * was asked about: a job of this turn holding this very call (same id,
 * tool and arguments), else {@link FrameworkApprovalRefusedError} and nothing
 * is decided. It is written fenced on the receipt's lifetime and digest (the
 * ones the decision carries, when it does), once: a decision met again (a
 * resume after a crash) finds it written and waits for the call's result,
 * and a call that already ran gives its recorded result.
 */
export async function decideApproval(
  options: FrameworkToolsOptions,
  call: FrameworkCall,
  decision: FrameworkDecision,
): Promise<CallAnswer> {
  const approvals = approvalsOf(options, call);
  const turn = turnOf(options, call);
  const found = await options.client.find(turn);
  if (found === undefined) throw new FrameworkApprovalRefusedError(call.toolCallId, call.tool.name, 'not_requested');
  const asked: ToolCallInput | undefined = found.calls.length === 1 ? found.calls[0] : undefined;
  if (asked === undefined || asked.id !== call.toolCallId || asked.name !== call.tool.name) {
    throw new FrameworkApprovalRefusedError(call.toolCallId, call.tool.name, 'other_call');
  }
  if (canonicalJson(asked.input ?? null) !== canonicalJson(call.input ?? null)) {
    throw new FrameworkApprovalRefusedError(call.toolCallId, call.tool.name, 'other_arguments');
  }
  const asking = await askApproval(options, call);
  if (asking.kind === 'answered') return asking.answer;
  const { ticket } = asking;
  const decide = decision.approved ? approveCall : denyCall;
  try {
    await decide({
      redis: approvals.redis,
      ...(approvals.prefix ? { prefix: approvals.prefix } : {}),
      receiptKey: ticket.receiptKey,
      ...(decision.fence ?? { epoch: ticket.epoch, argsHash: ticket.argsHash }),
      actor: decision.actor ?? approvals.actor ?? `${call.framework} approval`,
      ...(decision.note ? { note: decision.note } : {}),
      ...(approvals.queue ? { queue: approvals.queue } : {}),
      ...(approvals.durability ? { durability: approvals.durability } : {}),
    });
  } catch (error) {
    // Decided already (the same decision met again after a crash, or a person on the console): that decision stands.
    if (!(error instanceof ApprovalNotPendingError)) throw error;
  }
  return answerCall(options, call);
}

function approvalsOf(options: FrameworkToolsOptions, call: FrameworkCall): FrameworkApprovals {
  if (options.approvals === undefined) {
    throw new InvalidOptionsError(
      `${call.framework} tools`,
      'approvals',
      `${call.framework} tool ${call.tool.name} has an approval rule, so its options need approvals: { redis } (the receipts' connection) to write a person's decision`,
    );
  }
  return options.approvals;
}
