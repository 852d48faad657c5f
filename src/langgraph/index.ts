/**
 * `bullmq-tool-receipts/langgraph`: your tools as LangChain tools for
 * LangGraph's `ToolNode`, each call run by the `withToolReceipts` workers,
 * with approval asked through LangGraph's `interrupt()` and answered by a
 * resume (`Command({ resume })`) that is written as the receipt's fenced
 * decision. Needs `@langchain/langgraph` and `@langchain/core` (optional
 * peers). See docs/frameworks.md.
 */
import { ToolMessage } from '@langchain/core/messages';
import { tool, type StructuredToolInterface } from '@langchain/core/tools';
import type { ToolRunnableConfig } from '@langchain/core/tools';
import { interrupt } from '@langchain/langgraph';
import type { AnyToolDefinition } from '../bullmq/tools/define-tool.js';
import { InvalidOptionsError } from '../core/options.js';
import { FrameworkApprovalRefusedError } from '../frameworks/errors.js';
import {
  answerCall,
  approvalAsked,
  askApproval,
  decideApproval,
  type ApprovalTicket,
  type CallAnswer,
  type FrameworkCall,
  type FrameworkToolsOptions,
} from '../frameworks/receipt-call.js';

export { FrameworkApprovalRefusedError, type ApprovalRefusal } from '../frameworks/errors.js';
export type { ApprovalTicket, FrameworkApprovals, FrameworkToolsOptions } from '../frameworks/receipt-call.js';

/** Options of {@link langGraphReceiptTools}. */
export interface LangGraphReceiptToolsOptions extends FrameworkToolsOptions {
  /**
   * The run the calls belong to. Default: the graph's `thread_id`
   * (`config.configurable.thread_id`), which is what makes a resumed or
   * replayed thread the same run.
   */
  readonly runId?: string;
}

/** What the tool's `interrupt()` hands the app: the call awaiting a person, and what a decision must name. */
export interface LangGraphApprovalRequest extends ApprovalTicket {
  readonly kind: 'tool-receipts.approval';
}

/** What the graph is resumed with (`new Command({ resume })`): a decision on one request, made by {@link langGraphDecision}. */
export interface LangGraphApprovalDecision {
  readonly approved: boolean;
  /** The call, lifetime and arguments the decision is about, as the request named them. */
  readonly toolCallId: string;
  readonly epoch: string;
  readonly argsHash: string;
  readonly actor?: string;
  readonly note?: string;
}

/** The decision to resume the graph with, for a request its `interrupt()` handed over. */
export function langGraphDecision(
  request: LangGraphApprovalRequest,
  decision: { readonly approved: boolean; readonly actor?: string; readonly note?: string },
): LangGraphApprovalDecision {
  const { toolCallId, epoch, argsHash } = request;
  return { toolCallId, epoch, argsHash, ...decision };
}

/**
 * LangChain tools for `ToolNode`, one per definition (same name,
 * description and input schema), whose function submits the call to the
 * workers and returns its result as a `ToolMessage` (`status: 'error'` for a
 * failure, a refusal, a denial or an unknown outcome, its text what the
 * model reads). Each call is its own turn, `langgraph:<toolCallId>`: a
 * thread replayed or resumed from a checkpoint before the call ended
 * attaches to its job and gets the recorded result.
 *
 * A tool with an approval rule submits the call, which parks on its receipt
 * (kept on the server with its id and arguments), and calls `interrupt()`
 * with a {@link LangGraphApprovalRequest}. LangGraph runs the tool's
 * function again from the top on resume; the call's submit only attaches to
 * its job then. The resume value, {@link langGraphDecision}, is written as
 * the receipt's decision, fenced on the call's id, lifetime and arguments:
 * one for another call is refused (`FrameworkApprovalRefusedError`), one for
 * other arguments or another lifetime by the receipt's fence
 * (`approval.args_mismatch`, `approval.stale_lifetime`); met again after a
 * crash, it finds the decision written and waits for the result.
 */
export function langGraphReceiptTools(
  tools: Iterable<AnyToolDefinition>,
  options: LangGraphReceiptToolsOptions,
): StructuredToolInterface[] {
  return [...tools].map((definition) => langGraphReceiptTool(definition, options));
}

function langGraphReceiptTool(definition: AnyToolDefinition, options: LangGraphReceiptToolsOptions): StructuredToolInterface {
  const callOf = (input: unknown, config: ToolRunnableConfig): FrameworkCall => {
    const runId = options.runId ?? (config.configurable?.['thread_id'] as string | undefined);
    if (typeof runId !== 'string' || runId === '') {
      throw new InvalidOptionsError('langGraphReceiptTools', 'runId', 'give runId, or run the graph with a thread_id in its config');
    }
    const toolCallId = config.toolCall?.id ?? '';
    return {
      framework: 'LangGraph',
      tool: definition,
      toolCallId,
      input,
      runId,
      turnId: `langgraph:${toolCallId}`,
      ...(config.signal === undefined ? {} : { signal: config.signal }),
    };
  };
  return tool(
    async (input: unknown, config: ToolRunnableConfig) => {
      const call = callOf(input, config);
      return messageOf(call, await answerOf(options, call));
    },
    { name: definition.name, description: definition.description ?? definition.name, schema: definition.input },
  ) as unknown as StructuredToolInterface;
}

/** The call's answer: asked about and decided through `interrupt()` when its rule asks a person, else run. */
async function answerOf(options: LangGraphReceiptToolsOptions, call: FrameworkCall): Promise<CallAnswer> {
  if (!approvalAsked(options, call)) return answerCall(options, call);
  // Runs again on every resume: the submit attaches to the call's job, so this never asks twice.
  const asked = await askApproval(options, call);
  if (asked.kind === 'answered') return asked.answer;
  const request: LangGraphApprovalRequest = { kind: 'tool-receipts.approval', ...asked.ticket };
  const resumed = interrupt<LangGraphApprovalRequest, unknown>(request);
  const decision = resumed as Partial<LangGraphApprovalDecision> | null | undefined;
  if (
    typeof decision !== 'object' ||
    decision === null ||
    typeof decision.approved !== 'boolean' ||
    decision.toolCallId !== call.toolCallId
  ) {
    throw new FrameworkApprovalRefusedError(call.toolCallId, call.tool.name, 'other_call');
  }
  return decideApproval(options, call, {
    approved: decision.approved,
    fence: { epoch: String(decision.epoch ?? ''), argsHash: String(decision.argsHash ?? '') },
    ...(typeof decision.actor === 'string' ? { actor: decision.actor } : {}),
    ...(typeof decision.note === 'string' ? { note: decision.note } : {}),
  });
}

function messageOf(call: FrameworkCall, answer: CallAnswer): ToolMessage {
  return new ToolMessage({
    content: answer.text,
    tool_call_id: call.toolCallId,
    name: call.tool.name,
    status: answer.isError ? 'error' : 'success',
  });
}
