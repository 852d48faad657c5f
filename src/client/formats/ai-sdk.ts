/**
 * Vercel AI SDK: tool-call parts become calls, results become a `role:
 * 'tool'` message of tool-result parts; and {@link aiSdkTools} turns the
 * library's tools into AI SDK tools whose `execute` submits the call through
 * the client, so a `generateText` / `streamText` loop runs them on the
 * workers. Declared structurally; `ai` is not needed at run time.
 */
import type { AnyToolDefinition } from '../../bullmq/tools/define-tool.js';
import { toolJsonSchema } from '../../bullmq/tools/define-tool.js';
import type { ToolResultBlock } from '../../bullmq/job-data.js';
import { ToolReceiptsError } from '../../core/errors.js';
import type { ToolCallClient } from '../client.js';
import { TurnConflictError } from '../errors.js';
import { conflictResult, pairResults, toolCallEntry, type TurnCallEntry, type TurnCalls } from '../turn.js';
import { aiSdkTurnId, type AiSdkToolCallContext } from './ai-sdk-turn-id.js';
import { awaitingApproval, type TurnResult } from '../approval.js';

/** Any content part; only `tool-call` parts the provider did not run itself are read. */
export interface AiSdkContentPart {
  readonly type: string;
}

/** A tool-call part (`ToolCallPart`, or a `generateText` result's `toolCalls` entry). */
export interface AiSdkToolCallPart extends AiSdkContentPart {
  readonly type: 'tool-call';
  readonly toolCallId: string;
  readonly toolName: string;
  readonly input: unknown;
  readonly providerExecuted?: boolean;
}

/** A tool-result part, with a text output (or an error text for an error result). */
export interface AiSdkToolResultPart {
  type: 'tool-result';
  toolCallId: string;
  toolName: string;
  output: { type: 'text'; value: string } | { type: 'error-text'; value: string };
}

/** The tool message that answers a step's tool calls. */
export interface AiSdkToolMessage {
  role: 'tool';
  content: AiSdkToolResultPart[];
}

/** Read the tool-call parts of an assistant message (or of a list of parts), in order. */
export function aiSdkToolCalls(
  message: { readonly content: string | readonly AiSdkContentPart[] } | readonly AiSdkContentPart[],
): TurnCalls {
  const parts: string | readonly AiSdkContentPart[] = 'content' in message ? message.content : message;
  if (typeof parts === 'string') return { entries: [] };
  const entries: TurnCallEntry[] = [];
  for (const part of parts) {
    if (part.type !== 'tool-call') continue;
    const { toolCallId: id, toolName: name, input, providerExecuted } = part as Partial<AiSdkToolCallPart>;
    if (!providerExecuted) entries.push(toolCallEntry('AI SDK', id, name, input));
  }
  return { entries };
}

/** The tool message with one tool-result part per call, in order; error results use `error-text`. */
export function aiSdkToolMessage(turn: TurnCalls, results: readonly ToolResultBlock[]): AiSdkToolMessage {
  const content = pairResults(turn, results, (call, result): AiSdkToolResultPart => ({
    type: 'tool-result',
    toolCallId: call.id,
    toolName: call.name,
    output: { type: result.is_error ? 'error-text' : 'text', value: result.content },
  }));
  return { role: 'tool', content };
}

/** AI SDK 6's `tool-approval-request` content part: a call that waits for a person. */
export interface AiSdkToolApprovalRequestPart {
  type: 'tool-approval-request';
  /** The call's receipt key: what `approveCall` / `denyCall` name. */
  approvalId: string;
  toolCall: { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown };
}

/**
 * The calls of a parked turn (`submit` with `approvals: 'return'`) that
 * await approval, as AI SDK 6 `tool-approval-request` parts, for a UI built
 * on the SDK's approval parts to show. The `approvalId` is the receipt key.
 * Only `approveCall` / `denyCall` (or the CLI, the console) decide: a
 * `tool-approval-response` part in the message history decides nothing on
 * the receipt. Calls the turn does not hold are left out.
 */
export function aiSdkApprovalRequests(turn: TurnCalls, results: readonly TurnResult[]): AiSdkToolApprovalRequestPart[] {
  const calls = new Map(turn.entries.flatMap((e) => (e.kind === 'call' ? [[e.call.id, e.call] as const] : [])));
  return awaitingApproval(results).flatMap((r) => {
    const call = calls.get(r.tool_use_id);
    if (call === undefined) return [];
    const toolCall = { type: 'tool-call' as const, toolCallId: call.id, toolName: call.name, input: call.input };
    return [{ type: 'tool-approval-request' as const, approvalId: r.approval.receiptKey, toolCall }];
  });
}

/**
 * A tool's error result (a failure, a refusal, an unknown outcome), thrown
 * from an AI SDK tool's `execute` so the SDK hands it to the model as a tool
 * error; the message is the text the worker wrote for the model.
 */
export class ToolErrorResult extends ToolReceiptsError {
  readonly code = 'tool.error_result';
  constructor(
    readonly result: ToolResultBlock,
    options?: { cause?: unknown },
  ) {
    super(result.content, options);
  }
}

/**
 * A Standard Schema (with its JSON Schema) that lets every input through: the
 * model is shown the tool's JSON Schema, and the worker repairs and validates
 * the input, so a call the SDK would have refused still gets the library's
 * repair and its error result.
 */
export interface PassThroughInputSchema {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => { value: unknown };
    readonly jsonSchema: {
      readonly input: (options: unknown) => Record<string, unknown>;
      readonly output: (options: unknown) => Record<string, unknown>;
    };
  };
}

/** An AI SDK tool (structurally) that runs on the workers. */
export interface AiSdkReceiptTool {
  readonly description?: string;
  readonly inputSchema: PassThroughInputSchema;
  execute(
    input: unknown,
    options: { readonly toolCallId: string; readonly abortSignal?: AbortSignal; readonly messages?: readonly unknown[] },
  ): Promise<string>;
}

/** Where the AI SDK tools submit their calls. */
export interface AiSdkToolsOptions {
  readonly client: ToolCallClient;
  readonly tenantId: string;
  readonly runId: string;
  readonly sessionId?: string;
  /** Wait limit per call. */
  readonly timeoutMs?: number;
  /**
   * The turn id a call is submitted under. The SDK runs each call of a step
   * on its own, so each call is its own turn and its own job. Default
   * {@link aiSdkTurnId}, `ai-sdk:<toolCallId>:<digest>`, the digest naming
   * the step (its messages) and the call (tool, input): a step run again
   * from the same messages attaches to its jobs, and a tool-call id a
   * provider reuses in a later step gets a job of its own. An id of your own
   * must do both: one that repeats for a different call makes that call fail
   * (the model is told it was not run).
   */
  readonly turnIdOf?: (toolCallId: string, call: AiSdkToolCallContext) => string | Promise<string>;
}

/**
 * AI SDK tools (pass them as `tools` to `generateText` / `streamText`) whose
 * `execute` submits the call through the client and resolves with the
 * tool_result's text; an error result is thrown as {@link ToolErrorResult}.
 * A call whose turn id already names another call (`turn.conflict`) is not
 * run, and is thrown as a {@link ToolErrorResult} telling the model so (the
 * `TurnConflictError` is its `cause`); any other `TurnError` (ambiguous,
 * timeout…) is thrown as it is.
 */
export function aiSdkTools(tools: Iterable<AnyToolDefinition>, options: AiSdkToolsOptions): Record<string, AiSdkReceiptTool> {
  const turnIdOf = options.turnIdOf ?? ((_toolCallId: string, call: AiSdkToolCallContext) => aiSdkTurnId(call));
  const entries = [...tools].map((tool): [string, AiSdkReceiptTool] => {
    const schema = toolJsonSchema(tool);
    return [
      tool.name,
      {
        ...(tool.description === undefined ? {} : { description: tool.description }),
        inputSchema: {
          '~standard': {
            version: 1,
            vendor: 'bullmq-tool-receipts',
            validate: (value) => ({ value }),
            jsonSchema: { input: () => schema, output: () => schema },
          },
        },
        async execute(input, { toolCallId, abortSignal, messages }) {
          const turnId = await turnIdOf(toolCallId, { toolCallId, toolName: tool.name, input, messages: messages ?? [] });
          const [result] = await options.client
            .submit({
              tenantId: options.tenantId,
              runId: options.runId,
              turnId,
              ...(options.sessionId === undefined ? {} : { sessionId: options.sessionId }),
              calls: [{ id: toolCallId, name: tool.name, input }],
              ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
              ...(abortSignal === undefined ? {} : { signal: abortSignal }),
            })
            .catch((error: unknown) => {
              if (error instanceof TurnConflictError) throw new ToolErrorResult(conflictResult(toolCallId, tool.name), { cause: error });
              throw error;
            });
          if (result!.is_error) throw new ToolErrorResult(result!);
          return result!.content;
        },
      },
    ];
  });
  return Object.fromEntries(entries);
}
