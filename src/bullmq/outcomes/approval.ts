/**
 * The hook a call of a tool with an approval rule passes before its claim
 * (see src/approvals/gate.ts): it parks the job while a person decides,
 * answers a denied call with a sentence for the model, or lets the claim go
 * on (an approved call's claim starts it).
 */
import { DelayedError } from 'bullmq';
import {
  approvalNeeded,
  DEFAULT_APPROVAL_TIMEOUT_MS,
  deniedText,
  shownText,
  type ApprovalGate,
  type GateAnswer,
} from '../../approvals/gate.js';
import type { ApprovalOptions, ApprovalRule } from '../../approvals/types.js';
import { receiptRedisKey } from '../../redis/keys.js';
import type { ApprovalRuntime, ReadyCall, ToolApproval } from '../runtime.js';
import { recordedEffectOf } from '../../core/tool-effect.js';
import type { AnyToolDefinition } from '../tools/define-tool.js';
import { throwIfInterrupted } from '../call/interruption.js';
import { ToolCallFailedError } from '../errors.js';
import { toolResultBlock, type ToolResultBlock } from '../../core/job-data.js';
import { clearAwaitingApproval, noteAwaitingApproval } from './approval-progress.js';
import { leftStatus } from '../turn/park-job.js';

/** The approvals of a worker whose tools or options set a rule; `undefined` when none does. */
export function approvalRuntime(
  gate: ApprovalGate,
  tools: Iterable<AnyToolDefinition>,
  defaults: ApprovalOptions,
): ApprovalRuntime | undefined {
  const byTool = new Map<AnyToolDefinition, ToolApproval>();
  for (const tool of tools) {
    const approval = toolApproval(tool, defaults);
    if (approval) byTool.set(tool, approval);
  }
  if (byTool.size === 0) return undefined;
  return { gate, of: (tool) => byTool.get(tool) };
}

/** The approval a tool runs with under `defaults`, or `undefined` when it needs none. */
export function toolApproval(tool: AnyToolDefinition, defaults: ApprovalOptions): ToolApproval | undefined {
  const rule = (tool.approval as ApprovalRule | undefined) ?? defaults.approval;
  if (rule === undefined) return undefined;
  return {
    rule,
    redact: (tool.redact as ((args: unknown) => unknown) | undefined) ?? defaults.redact,
    timeoutMs: tool.approvalTimeoutMs ?? defaults.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS,
  };
}

/**
 * What the gate lets a call do: end with the block of a denied call, or go
 * on to its claim; `needsApproval` when a person was asked about this call
 * (its claim then never starts a lifetime nobody approved: see
 * `ClaimOptions.needsApproval`).
 */
export type GatePassed =
  { readonly kind: 'denied'; readonly block: ToolResultBlock } | { readonly kind: 'claim'; readonly needsApproval: boolean };

const CLAIM_FREELY: GatePassed = { kind: 'claim', needsApproval: false };

/**
 * Passes the gate for one call. Returns the block for a denied call, or
 * that the claim goes on; for a call awaiting a decision it parks the job
 * until the approval expires (a decision promotes it sooner) and throws
 * DelayedError, without using one of the job's attempts.
 */
export async function passApprovalGate(callRun: ReadyCall): Promise<GatePassed> {
  const { runtime, scope, call, tool, key, args, facts } = callRun;
  const approvals = runtime.approvals;
  const approval = approvals?.of(tool);
  if (approvals === undefined || approval === undefined) return CLAIM_FREELY;
  const { tenantId, runId } = scope.data;
  const onIndexError = (error: unknown) => facts.approvalIndexNotUpdated(error);
  const request = { key, effect: recordedEffectOf(tool), timeoutMs: approval.timeoutMs, job: scope.attemptJob };
  // Set when the rule threw: a person was asked about this call already, or the job fails.
  let needed: ReturnType<typeof approvalNeeded> = {};
  let answer: GateAnswer | undefined;
  try {
    needed = approvalNeeded(approval.rule, args, { tenantId, runId, toolName: tool.name, callId: call.id });
  } catch (error) {
    // The rule counts only until a decision (or a request) exists: the gate, asked without it, says whether one does.
    answer = await approvals.gate.pass({ ...request, needed: undefined, shown: '' }, onIndexError);
    if (answer.kind === 'claim') {
      const why = error instanceof Error ? error.message : String(error);
      const text = `the approval rule of ${tool.name} threw (${why}); the call was not run`;
      throw new ToolCallFailedError(tool.name, call.id, 'neverStarted', text, { cause: error });
    }
  }
  answer ??= await approvals.gate.pass({ ...request, needed, shown: needed ? shownText(approval.redact, args) : '' }, onIndexError);
  const receiptKey = receiptRedisKey(runtime.keyspace.receipts.prefix, key);
  const event = (state: 'requested' | 'approved' | 'denied' | 'expired', actor?: string) => facts.approval(state, actor, receiptKey);
  // The job's progress note for the agent's client: a failure to write it only leaves the client waiting longer.
  const note = (write: Promise<void>) => write.catch((error: unknown) => facts.approvalNotNoted(error));
  if (answer.kind === 'approved' || answer.kind === 'denied') await note(clearAwaitingApproval(scope.job, call.id));
  switch (answer.kind) {
    case 'claim':
      return { kind: 'claim', needsApproval: needed !== undefined };
    case 'approved':
      event('approved');
      return { kind: 'claim', needsApproval: needed !== undefined };
    case 'denied':
      event(answer.expired ? 'expired' : 'denied', answer.actor);
      return { kind: 'denied', block: toolResultBlock(call, 'denied', { content: deniedText(tool.name, answer), is_error: true }) };
    case 'await': {
      // Requested when the call starts waiting, or is first listed for a person by a later gate (the one that
      // created it never listed it: its worker died first, or its write was not acknowledged).
      if (answer.created || answer.listedNow) event('requested');
      throwIfInterrupted(scope.job.id ?? '', scope.abort);
      // Wake a little after the expiry, so the gate then finds it expired (server clock on both sides).
      const delay = Math.max(1, answer.expiresAtMs - answer.nowMs + 1);
      facts.waiting(delay);
      const reason = needed?.reason;
      await note(
        noteAwaitingApproval(
          scope.job,
          {
            tool_use_id: call.id,
            tool: tool.name,
            receiptKey,
            ...(reason ? { reason } : {}),
            expiresAtMs: answer.expiresAtMs,
          },
          scope.answered,
        ),
      );
      // A decision made before the job was parked found it running, and promoted nothing: it comes back now.
      await scope.park(answer.nowMs, delay, leftStatus(runtime.keyspace.receipts, key, 'awaiting_approval'));
      throw new DelayedError(`tool call ${call.id} waits for approval until ${new Date(answer.expiresAtMs).toISOString()}`);
    }
  }
}
