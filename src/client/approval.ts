/**
 * A turn parked for approval, as the agent's side sees it when `submit`
 * returns at once (`approvals: 'return'`): one block per call, the calls
 * awaiting a person marked as such (a distinct outcome, not an error), the
 * others not answered yet. Submitting the same turn again later attaches to
 * its job and gives the real results once the decision is made.
 */
import type { AwaitingApprovalCall } from '../bullmq/outcomes/approval-progress.js';
import type { ToolJobData, ToolResultBlock } from '../bullmq/job-data.js';

/** A call waiting for a person's approval: not run yet, not an error. */
export interface AwaitingApprovalResult {
  readonly type: 'tool_result';
  readonly tool_use_id: string;
  /** A sentence saying so (for a log or a UI; not a tool result to give the model). */
  readonly content: string;
  readonly outcome: 'awaiting_approval';
  readonly approval: {
    /** What `approveCall` / `denyCall`, `tool-receipts approve` and the console name. */
    readonly receiptKey: string;
    readonly reason?: string;
    /** When it counts as denied if nobody decides (ms, the Redis server's clock). */
    readonly expiresAtMs: number;
  };
}

/** A call of a parked turn that is not answered yet: it waits behind the call awaiting approval (or beside it, in a group run side by side). */
export interface UnansweredResult {
  readonly type: 'tool_result';
  readonly tool_use_id: string;
  readonly content: string;
  readonly outcome: 'pending';
}

/** One call's result as `submit` with `approvals: 'return'` gives it. */
export type TurnResult = ToolResultBlock | AwaitingApprovalResult | UnansweredResult;

/**
 * The blocks of a turn whose job is parked until `awaiting` are decided, in
 * call order: the calls that already ran (`answered`) with their results.
 */
export function parkedTurnResults(
  data: ToolJobData,
  awaiting: readonly AwaitingApprovalCall[],
  answered: readonly ToolResultBlock[] = [],
): TurnResult[] {
  return data.calls.map((call): TurnResult => {
    const waiting = awaiting.find((a) => a.tool_use_id === call.id);
    const ran = answered.find((block) => block.tool_use_id === call.id);
    if (waiting === undefined && ran !== undefined) return ran;
    if (waiting === undefined) {
      return {
        type: 'tool_result',
        tool_use_id: call.id,
        content: `Not answered yet: this turn waits for a person to approve another of its calls; submit the turn again for its results.`,
        outcome: 'pending',
      };
    }
    const why = waiting.reason ? ` (${waiting.reason})` : '';
    return {
      type: 'tool_result',
      tool_use_id: call.id,
      content: `${waiting.tool} waits for a person's approval${why} until ${new Date(waiting.expiresAtMs).toISOString()}; it has not run.`,
      outcome: 'awaiting_approval',
      approval: {
        receiptKey: waiting.receiptKey,
        ...(waiting.reason ? { reason: waiting.reason } : {}),
        expiresAtMs: waiting.expiresAtMs,
      },
    };
  });
}

/** The calls of `results` that await approval. */
export function awaitingApproval(results: readonly TurnResult[]): AwaitingApprovalResult[] {
  return results.filter((r): r is AwaitingApprovalResult => r.outcome === 'awaiting_approval');
}

/** Whether every call is answered (nothing awaits approval): then the results go to the model as they are. */
export function isTurnAnswered(results: readonly TurnResult[]): results is ToolResultBlock[] {
  return results.every((r) => r.outcome !== 'awaiting_approval' && r.outcome !== 'pending');
}
