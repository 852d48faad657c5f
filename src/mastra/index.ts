/**
 * `bullmq-tool-receipts/mastra`: your tools as Mastra's own tools
 * (`createTool`), each call run by the `withToolReceipts` workers, with
 * Mastra's approval flow (`requireApproval`, a run suspended for approval,
 * `approveToolCallGenerate`) written as the receipt's fenced decision. Needs
 * `@mastra/core` (an optional peer). See docs/frameworks.md.
 */
import { createTool } from '@mastra/core/tools';
import type { AnyToolDefinition } from '../bullmq/tools/define-tool.js';
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

/** Options of {@link mastraReceiptTools}. */
export interface MastraReceiptToolsOptions extends FrameworkToolsOptions {
  /**
   * The run the calls belong to: the memory thread's id (make the tools per
   * request, e.g. from the agent's `tools` function of its request context).
   * A run Mastra resumes from its snapshot, or a turn it retries, is the
   * same run only under the same id.
   */
  readonly runId: string;
}

/** A tool as {@link mastraReceiptTools} makes it: Mastra's own tool object. */
export type MastraReceiptTool = ReturnType<typeof createTool>;

/**
 * Mastra tools, one per definition (same id as the definition's name,
 * description and input schema), whose `execute` submits the call to the
 * workers and returns its result's text; every outcome (a failure, a
 * refusal, a denial, an unknown outcome) is that text, which the model
 * reads. Each call is its own turn, `mastra:<toolCallId>`: a snapshot
 * restored and run again attaches to the call's job and gets the recorded
 * result.
 *
 * A tool with an approval rule gets `requireApproval` (the rule, asked of
 * the input): the call is submitted and parked on its receipt as soon as
 * Mastra has its input (kept on the server with its id and arguments), and
 * Mastra suspends the run (`finishReason: 'suspended'`). The approval
 * Mastra hands on (`approveToolCallGenerate`) is written as the receipt's
 * decision, fenced on the call's id and arguments: arguments edited in the
 * snapshot since, or a call never asked about, are refused
 * (`FrameworkApprovalRefusedError`; an approval for a call that is not
 * suspended Mastra refuses itself); met again after a crash, the decision is
 * found written and the result awaited. Mastra asks a tool's rule before it
 * knows the call's id, so a turn retried after the call was decided is
 * suspended again: approving it gives the recorded result, nothing runs.
 */
export function mastraReceiptTools(
  tools: Iterable<AnyToolDefinition>,
  options: MastraReceiptToolsOptions,
): Record<string, MastraReceiptTool> {
  return Object.fromEntries([...tools].map((definition) => [definition.name, mastraReceiptTool(definition, options)]));
}

function mastraReceiptTool(definition: AnyToolDefinition, options: MastraReceiptToolsOptions): MastraReceiptTool {
  const callOf = (toolCallId: string, input: unknown, signal?: AbortSignal): FrameworkCall => ({
    framework: 'Mastra',
    tool: definition,
    toolCallId,
    input,
    runId: options.runId,
    turnId: `mastra:${toolCallId}`,
    ...(signal === undefined ? {} : { signal }),
  });
  const hasRule = definition.approval !== undefined;
  return createTool({
    id: definition.name,
    description: definition.description ?? definition.name,
    inputSchema: definition.input,
    ...(hasRule
      ? {
          // Mastra asks this before it knows the call's id: the rule alone answers.
          requireApproval: (input: unknown) => approvalAsked(options, callOf('', input)),
          // Mastra hands the call over here before it suspends: the request is kept on the server from now on.
          async onInputAvailable({ toolCallId, input }: { toolCallId: string; input: unknown }) {
            const call = callOf(toolCallId, input);
            if (approvalAsked(options, call)) await askApproval(options, call);
          },
        }
      : {}),
    async execute(input: unknown, context) {
      const call = callOf(context?.agent?.toolCallId ?? '', input, context?.abortSignal);
      // Mastra runs a tool whose rule asks only once a person approved it.
      const answer =
        hasRule && approvalAsked(options, call) ? await decideApproval(options, call, { approved: true }) : await answerCall(options, call);
      return answer.text;
    },
  });
}
