/**
 * Vercel AI SDK: tool-call parts become calls, results become a `role:
 * 'tool'` message of tool-result parts; and {@link aiSdkTools} turns the
 * library's tools into AI SDK tools whose `execute` submits the call through
 * the client, so a `generateText` / `streamText` loop runs them on the
 * workers. Declared structurally; `ai` is not needed at run time.
 */
import type { AnyToolDefinition } from '../../bullmq/define-tool.js';
import { toolJsonSchema } from '../../bullmq/define-tool.js';
import type { ToolResultBlock } from '../../bullmq/job-data.js';
import { ToolReceiptsError } from '../../core/errors.js';
import type { ToolCallClient } from '../client.js';
import { pairResults, toolCallEntry, type TurnCallEntry, type TurnCalls } from '../turn.js';

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
export function aiSdkToolCalls(message: { readonly content: string | readonly AiSdkContentPart[] } | readonly AiSdkContentPart[]): TurnCalls {
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

/**
 * A tool's error result (a failure, a refusal, an unknown outcome), thrown
 * from an AI SDK tool's `execute` so the SDK hands it to the model as a tool
 * error; the message is the text the worker wrote for the model.
 */
export class ToolErrorResult extends ToolReceiptsError {
  readonly code = 'tool.error_result';
  constructor(readonly result: ToolResultBlock) {
    super(result.content);
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
    readonly jsonSchema: { readonly input: (options: unknown) => Record<string, unknown>; readonly output: (options: unknown) => Record<string, unknown> };
  };
}

/** An AI SDK tool (structurally) that runs on the workers. */
export interface AiSdkReceiptTool {
  readonly description?: string;
  readonly inputSchema: PassThroughInputSchema;
  execute(input: unknown, options: { readonly toolCallId: string; readonly abortSignal?: AbortSignal }): Promise<string>;
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
   * The turn id a call is submitted under. Default `ai-sdk:<toolCallId>`:
   * the SDK runs each call of a step on its own, so each call is its own
   * job, and a step retried with the same tool call ids attaches to them.
   */
  readonly turnIdOf?: (toolCallId: string) => string;
}

/**
 * AI SDK tools (pass them as `tools` to `generateText` / `streamText`) whose
 * `execute` submits the call through the client and resolves with the
 * tool_result's text; an error result is thrown as {@link ToolErrorResult},
 * and any `TurnError` (ambiguous, timeout…) is thrown as it is.
 */
export function aiSdkTools(tools: Iterable<AnyToolDefinition>, options: AiSdkToolsOptions): Record<string, AiSdkReceiptTool> {
  const turnIdOf = options.turnIdOf ?? ((toolCallId: string) => `ai-sdk:${toolCallId}`);
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
        async execute(input, { toolCallId, abortSignal }) {
          const [result] = await options.client.submit({
            tenantId: options.tenantId,
            runId: options.runId,
            turnId: turnIdOf(toolCallId),
            ...(options.sessionId === undefined ? {} : { sessionId: options.sessionId }),
            calls: [{ id: toolCallId, name: tool.name, input }],
            ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
            ...(abortSignal === undefined ? {} : { signal: abortSignal }),
          });
          if (result!.is_error) throw new ToolErrorResult(result!);
          return result!.content;
        },
      },
    ];
  });
  return Object.fromEntries(entries);
}
