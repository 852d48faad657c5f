/**
 * A hint for job data written in another model API's shape. A job's calls are
 * Anthropic-shaped (`{ id, name, input }`); a user holding OpenAI or AI SDK
 * calls gets a correct `job.invalid_data`, and this names the `/client`
 * adapter that converts what they have. Only shapes are read: nothing the
 * model wrote is quoted back.
 */

interface Shape {
  /** What the data looks like, for the sentence. */
  readonly looksLike: string;
  /** The `/client` function that turns it into a job's calls. */
  readonly adapter: string;
}

const OPENAI_CHAT: Shape = {
  looksLike: 'OpenAI Chat Completions tool calls (`function.name`, `function.arguments`)',
  adapter: 'openAIChatToolCalls(message)',
};
const OPENAI_RESPONSES: Shape = {
  looksLike: 'OpenAI Responses `function_call` items (`call_id`, `arguments`)',
  adapter: 'openAIResponsesToolCalls(response)',
};
const AI_SDK: Shape = { looksLike: 'Vercel AI SDK tool-call parts (`toolCallId`, `toolName`)', adapter: 'aiSdkToolCalls(message)' };
const ANTHROPIC: Shape = {
  looksLike: 'an Anthropic assistant message (its `content` holds the `tool_use` blocks)',
  adapter: 'anthropicToolCalls(message)',
};

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The shape of one would-be call, if it is another API's. */
function callShape(call: unknown): Shape | undefined {
  if (!isRecord(call)) return undefined;
  if (isRecord(call.function) && ('arguments' in call.function || call.type === 'function')) return OPENAI_CHAT;
  if (call.type === 'function_call' || ('call_id' in call && 'arguments' in call)) return OPENAI_RESPONSES;
  if (call.type === 'tool-call' || ('toolCallId' in call && 'toolName' in call)) return AI_SDK;
  return undefined;
}

/** The shape of a whole message or response passed as job data, if it is one. */
function messageShape(data: Record<string, unknown>): Shape | undefined {
  if (Array.isArray(data.tool_calls)) return OPENAI_CHAT;
  if (Array.isArray(data.output) && data.output.some(callShape)) return OPENAI_RESPONSES;
  if (Array.isArray(data.toolCalls) && data.toolCalls.some(callShape)) return AI_SDK;
  if (Array.isArray(data.content)) {
    if (data.content.some((part) => isRecord(part) && part.type === 'tool_use')) return ANTHROPIC;
    if (data.content.some(callShape)) return AI_SDK;
  }
  return undefined;
}

/**
 * A sentence naming the `/client` adapter for data shaped like another API's
 * tool calls, or `undefined` when the data looks like nothing known.
 */
export function jobDataShapeHint(data: unknown): string | undefined {
  if (!isRecord(data)) return undefined;
  const calls = Array.isArray(data.calls) ? data.calls : undefined;
  const shape = calls?.map(callShape).find((s) => s !== undefined) ?? (calls === undefined ? messageShape(data) : undefined);
  if (shape === undefined) return undefined;
  return (
    `this looks like ${shape.looksLike}, but a job's calls are { id, name, input } (Anthropic's tool_use blocks): ` +
    `convert them with ${shape.adapter} from 'bullmq-tool-receipts/client', or submit the turn with createToolCallClient, which does it for you`
  );
}
