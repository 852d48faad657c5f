/**
 * `bullmq-tool-receipts/ai-sdk`: your tools as the Vercel AI SDK's own
 * `tool()` objects (pass them as `tools` to `generateText` / `streamText`),
 * each call run by the `withToolReceipts` workers, with the SDK's approval
 * flow (`needsApproval`, `tool-approval-request` / `-response` parts)
 * written as the receipt's fenced decision. Needs `ai` (an optional peer).
 * See docs/frameworks.md.
 */
import { jsonSchema, tool, type ModelMessage, type Tool, type ToolSet } from 'ai';
import { toolJsonSchema, type AnyToolDefinition } from '../bullmq/tools/define-tool.js';
import { digestedTurnId } from '../client/formats/ai-sdk-turn-id.js';
import { ToolErrorResult } from '../client/formats/ai-sdk.js';
import { rejectedResult } from '../client/turn.js';
import {
  answerCall,
  approvalAsked,
  askApproval,
  decideApproval,
  type CallAnswer,
  type FrameworkCall,
  type FrameworkToolsOptions,
} from '../frameworks/receipt-call.js';

export { FrameworkApprovalRefusedError, type ApprovalRefusal } from '../frameworks/errors.js';
export { ToolErrorResult } from '../client/formats/ai-sdk.js';
export type { FrameworkApprovals, FrameworkToolsOptions } from '../frameworks/receipt-call.js';

/** Options of {@link aiSdkReceiptTools}. */
export interface AiSdkReceiptToolsOptions extends FrameworkToolsOptions {
  /**
   * The run the calls belong to: the conversation's id. The AI SDK carries
   * none, and this is what makes a retried step the same run (its calls are
   * replayed from their receipts).
   */
  readonly runId: string;
}

/**
 * AI SDK tools, one per definition (same name, description and input JSON
 * Schema), whose `execute` submits the call to the workers and resolves with
 * its result's text. An error result (failed, refused, limited, denied, of
 * unknown outcome) is thrown as `ToolErrorResult`, whose message the SDK
 * hands the model. Each call is its own turn,
 * `ai-sdk:<toolCallId>:<digest of the messages that led to it>`: the same
 * step run again (a retried `generateText` on the same messages) attaches to
 * its job and gets the recorded result.
 *
 * A tool with an approval rule gets `needsApproval`: the call is submitted
 * and parked on its receipt (the request is kept on the server, with the
 * call's id and arguments), and the SDK ends the step with a
 * `tool-approval-request`. When the app sends the `tool-approval-response`
 * back, `execute` finds it in the messages and writes it as the receipt's
 * decision, fenced on the call's id and arguments: a response for a call
 * that was never asked about, or for arguments edited since, is refused
 * (`FrameworkApprovalRefusedError`, thrown as a tool error); met again after
 * a crash, it finds the decision written and waits for the result.
 */
export function aiSdkReceiptTools(tools: Iterable<AnyToolDefinition>, options: AiSdkReceiptToolsOptions): ToolSet {
  return Object.fromEntries([...tools].map((definition) => [definition.name, aiSdkReceiptTool(definition, options)]));
}

function aiSdkReceiptTool(definition: AnyToolDefinition, options: AiSdkReceiptToolsOptions): Tool {
  const schema = toolJsonSchema(definition);
  const callOf = async (
    toolCallId: string,
    input: unknown,
    messages: readonly ModelMessage[],
    signal?: AbortSignal,
  ): Promise<FrameworkCall> => ({
    framework: 'AI SDK',
    tool: definition,
    toolCallId,
    input,
    runId: options.runId,
    turnId: await digestedTurnId('ai-sdk', toolCallId, { toolCallId, messages: messagesBefore(toolCallId, messages) }),
    ...(signal === undefined ? {} : { signal }),
  });
  const hasRule = definition.approval !== undefined;
  return tool<unknown, string>({
    ...(definition.description === undefined ? {} : { description: definition.description }),
    // The model is shown the tool's schema; the worker repairs and validates the input, so the SDK lets every input through.
    inputSchema: jsonSchema<unknown>(schema as Parameters<typeof jsonSchema>[0], { validate: (value) => ({ success: true, value }) }),
    ...(hasRule
      ? {
          async needsApproval(input: unknown, { toolCallId, messages }: { toolCallId: string; messages: ModelMessage[] }) {
            const call = await callOf(toolCallId, input, messages);
            if (!approvalAsked(options, call)) return false;
            // The SDK is resuming with a person's answer: execute writes it as the receipt's decision.
            if (approvalResponseOf(toolCallId, messages) !== undefined) return true;
            return (await askApproval(options, call)).kind === 'awaiting';
          },
        }
      : {}),
    async execute(input, { toolCallId, messages, abortSignal }) {
      const call = await callOf(toolCallId, input, messages, abortSignal);
      const response = hasRule ? approvalResponseOf(toolCallId, messages) : undefined;
      const answer =
        response === undefined
          ? await answerCall(options, call)
          : await decideApproval(options, call, { approved: response.approved, ...(response.reason ? { note: response.reason } : {}) });
      return textOrThrow(toolCallId, answer);
    },
  });
}

/** The answer's text, or an error result the SDK hands the model as a tool error. */
function textOrThrow(toolCallId: string, answer: CallAnswer): string {
  if (!answer.isError) return answer.text;
  throw new ToolErrorResult({ ...rejectedResult(toolCallId, answer.text), outcome: answer.outcome });
}

/**
 * The messages before the assistant message holding the call: those that led
 * to it, in the step that made it and in any later resume. A call whose id
 * the messages show answered already (a tool result for it after the
 * message that made it) is a later call reusing the id, as some providers
 * do: all the messages led to it, and name its turn apart.
 */
function messagesBefore(toolCallId: string, messages: readonly ModelMessage[]): readonly ModelMessage[] {
  for (let at = messages.length - 1; at >= 0; at--) {
    const message = messages[at]!;
    if (!Array.isArray(message.content)) continue;
    const parts: readonly { type: string; toolCallId?: string }[] = message.content;
    if (message.role === 'tool' && parts.some((part) => part.type === 'tool-result' && part.toolCallId === toolCallId)) return messages;
    if (message.role === 'assistant' && parts.some((part) => part.type === 'tool-call' && part.toolCallId === toolCallId)) {
      return messages.slice(0, at);
    }
  }
  return messages;
}

/** The `tool-approval-response` the messages hold for the call's `tool-approval-request`, if any (the last one wins, as in the SDK). */
function approvalResponseOf(toolCallId: string, messages: readonly ModelMessage[]): { approved: boolean; reason?: string } | undefined {
  const requested = new Set<string>();
  let response: { approved: boolean; reason?: string } | undefined;
  for (const message of messages) {
    if (!Array.isArray(message.content)) continue;
    for (const part of message.content) {
      if (message.role === 'assistant' && part.type === 'tool-approval-request' && part.toolCallId === toolCallId) {
        requested.add(part.approvalId);
      }
      if (message.role === 'tool' && part.type === 'tool-approval-response' && requested.has(part.approvalId)) {
        response = { approved: part.approved, ...(part.reason ? { reason: part.reason } : {}) };
      }
    }
  }
  return response;
}
