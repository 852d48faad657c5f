/**
 * Approving a call at the MCP client: the front asks the client's user (MCP
 * form elicitation) whether a call awaiting approval may run, and records
 * the answer on the receipt as any approver's decision is recorded (fenced
 * on the lifetime and arguments it showed, audited, the parked job
 * promoted). One approval, one execution: the receipt decides, not the ask.
 */
import type { Queue } from 'bullmq';
import type { ElicitRequestFormParams, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { APPROVAL_ACTOR_MAX, APPROVAL_NOTE_MAX, approveCall, denyCall } from '../approvals/decide.js';
import { readApproval } from '../approvals/read.js';
import type { RedisConnection } from '../redis/connection/connection.js';

/** Asks the user at the client; the SDK's `elicitation/create`, related to the call's request. */
export type AskUser = (params: ElicitRequestFormParams) => Promise<ElicitResult>;

/** What the ask needs to record a decision. */
export interface ApprovalAsk {
  readonly redis: RedisConnection;
  readonly prefix: string | undefined;
  readonly queue: Queue;
  readonly receiptKey: string;
  readonly tool: string;
  readonly args: unknown;
  readonly reason: string | undefined;
  /** Who the decision is recorded as made by: the user at this client, of this tenant. */
  readonly actor: string;
  readonly logger: Logger;
}

/** Most characters of the arguments shown in the question. */
const SHOWN_ARGS_MAX = 2000;

/**
 * Asks once and records the answer. `approved` or `denied` when a decision
 * was written by this ask; `undecided` when the user dismissed the question,
 * the client could not ask, or the call was no longer awaiting approval
 * (someone decided first, or it expired): then the receipt's own state
 * decides what happens next.
 */
export async function askApproval(ask: AskUser, call: ApprovalAsk): Promise<'approved' | 'denied' | 'undecided'> {
  const pending = await readApproval({ redis: call.redis, ...(call.prefix ? { prefix: call.prefix } : {}), receiptKey: call.receiptKey });
  if (pending === undefined || !('epoch' in pending)) return 'undecided';
  const args = JSON.stringify(call.args) ?? 'null';
  const shown = args.length > SHOWN_ARGS_MAX ? `${args.slice(0, SHOWN_ARGS_MAX)}… (${args.length} characters in all)` : args;
  let answer: ElicitResult;
  try {
    answer = await ask({
      mode: 'form',
      message: `Run the tool ${call.tool}? It needs your approval${call.reason ? ` (${call.reason})` : ''} before it runs, and it runs at most once.\nArguments: ${shown}`,
      requestedSchema: {
        type: 'object',
        properties: {
          approve: {
            type: 'boolean',
            title: 'Approve',
            description: `Yes runs ${call.tool} once with these arguments; no means it never runs`,
          },
          note: { type: 'string', title: 'Note', description: 'Why (kept with the decision)', maxLength: APPROVAL_NOTE_MAX },
        },
        required: ['approve'],
      },
    });
  } catch (error) {
    call.logger.warn(
      { err: error, receiptKey: call.receiptKey },
      'asking the MCP client to approve a call failed; it still awaits approval',
    );
    return 'undecided';
  }
  if (answer.action === 'cancel') return 'undecided';
  const approve = answer.action === 'accept' && answer.content?.approve === true;
  const given = answer.content?.note;
  const note = typeof given === 'string' && given.trim() !== '' ? given.slice(0, APPROVAL_NOTE_MAX) : undefined;
  const decision = {
    redis: call.redis,
    ...(call.prefix ? { prefix: call.prefix } : {}),
    receiptKey: call.receiptKey,
    epoch: pending.epoch,
    argsHash: pending.argsHash,
    actor: call.actor.slice(0, APPROVAL_ACTOR_MAX),
    source: 'code' as const,
    queue: call.queue,
    ...(note !== undefined ? { note } : answer.action === 'decline' ? { note: 'declined at the MCP client' } : {}),
  };
  try {
    await (approve ? approveCall(decision) : denyCall(decision));
    return approve ? 'approved' : 'denied';
  } catch (error) {
    // Decided by someone else first, or expired: the receipt says what happens, and the call waits for it.
    call.logger.info({ err: error, receiptKey: call.receiptKey }, 'the answer at the MCP client was not recorded');
    return 'undecided';
  }
}
