/**
 * `bullmq-tool-receipts/openai-agents`: your tools as the OpenAI Agents SDK's
 * own function tools (`tool()`), each call run by the `withToolReceipts`
 * workers, with the SDK's approval flow (`needsApproval` interruptions,
 * `RunState` approve / reject and resume) written as the receipt's fenced
 * decision. Needs `@openai/agents` (an optional peer). See docs/frameworks.md.
 */
import { tool, type FunctionTool, type RunContext } from '@openai/agents';
import { toolJsonSchema, type AnyToolDefinition } from '../bullmq/tools/define-tool.js';
import {
  answerCall,
  approvalAsked,
  askApproval,
  decideApproval,
  type FrameworkCall,
  type FrameworkToolsOptions,
} from '../frameworks/receipt-call.js';

export { FrameworkApprovalRefusedError, type ApprovalRefusal } from '../frameworks/errors.js';
export type { FrameworkApprovals, FrameworkToolsOptions } from '../frameworks/receipt-call.js';

/** Options of {@link openAIAgentsReceiptTools}. */
export interface OpenAIAgentsReceiptToolsOptions extends FrameworkToolsOptions {
  /**
   * The run the calls belong to: the conversation's id, or a function of
   * the run's context that reads it. The SDK's `RunState` carries no id of
   * its own; a run resumed from a saved state is the same run only under
   * the same id.
   */
  readonly runId: string | ((context: RunContext) => string);
}

/**
 * OpenAI Agents function tools, one per definition (same name, description
 * and input JSON Schema, not strict: the worker repairs and validates the
 * input), whose `execute` submits the call to the workers and returns its
 * result's text. Every outcome is the tool's output, errors included (a
 * failure, a refusal, a denial, an unknown outcome): the SDK's default error
 * handler would show the model a generic sentence instead. Each call is its
 * own turn, `openai-agents:<callId>`: a run resumed from a state saved
 * before the call ended attaches to its job and gets the recorded result.
 *
 * A tool with an approval rule gets `needsApproval`: the call is submitted
 * and parked on its receipt (kept on the server with its id and arguments),
 * and the run ends with an interruption. `state.approve(item)` and the
 * resumed run write the approval on the receipt, fenced on the call's id and
 * arguments: an approval for a call that was never asked about, or for
 * arguments edited in the saved state, is refused
 * (`FrameworkApprovalRefusedError`, which the run throws); met again after a
 * crash, it finds the decision written and waits for the result. A
 * `state.reject(item)` never reaches the tool (the runner answers the model
 * itself): write it on the receipt with `denyCall`, or the call waits until
 * its approval expires.
 */
export function openAIAgentsReceiptTools(
  tools: Iterable<AnyToolDefinition>,
  options: OpenAIAgentsReceiptToolsOptions,
): FunctionTool<unknown, any>[] {
  return [...tools].map((definition) => openAIAgentsReceiptTool(definition, options));
}

function openAIAgentsReceiptTool(definition: AnyToolDefinition, options: OpenAIAgentsReceiptToolsOptions): FunctionTool<unknown, any> {
  const schema = toolJsonSchema(definition) as { properties?: Record<string, Record<string, unknown>>; required?: string[] };
  const callOf = (context: RunContext, callId: string, input: unknown, signal?: AbortSignal): FrameworkCall => ({
    framework: 'OpenAI Agents',
    tool: definition,
    toolCallId: callId,
    input,
    runId: typeof options.runId === 'string' ? options.runId : options.runId(context),
    turnId: `openai-agents:${callId}`,
    ...(signal === undefined ? {} : { signal }),
  });
  const decisionOf = (context: RunContext, callId: string) => context.isToolApproved({ toolName: definition.name, callId });
  const hasRule = definition.approval !== undefined;
  const parameters = {
    type: 'object' as const,
    properties: schema.properties ?? {},
    required: schema.required ?? [],
    additionalProperties: true as const,
  };
  return tool<typeof parameters>({
    name: definition.name,
    description: definition.description ?? definition.name,
    parameters,
    strict: false,
    ...(hasRule
      ? {
          async needsApproval(context: RunContext, input: unknown, callId?: string) {
            const call = callOf(context, callId ?? '', input);
            if (!approvalAsked(options, call)) return false;
            // Decided on the state already: the runner acts on it (an approval reaches execute, which writes it).
            if (decisionOf(context, call.toolCallId) !== undefined) return true;
            return (await askApproval(options, call)).kind === 'awaiting';
          },
        }
      : {}),
    // Thrown errors reach the run: the model reads every outcome as the tool's output instead.
    errorFunction: null,
    async execute(input: unknown, context?: RunContext, details?) {
      const callId = details?.toolCall?.callId ?? '';
      const call = callOf(context!, callId, input, details?.signal);
      const approved = hasRule && decisionOf(context!, callId) === true;
      const answer = approved ? await decideApproval(options, call, { approved: true }) : await answerCall(options, call);
      return answer.text;
    },
  });
}
