/**
 * Anthropic Messages: an assistant message's `tool_use` blocks become calls,
 * and results become the next user message, one `tool_result` block per
 * `tool_use`, in order and before anything else. Shapes are declared here
 * structurally; the SDK is not needed at run time.
 */
import type { ToolResultBlock } from '../../bullmq/job-data.js';
import { pairResults, toolCallEntry, type TurnCallEntry, type TurnCalls } from '../turn.js';

/** Any content block; only `tool_use` ones are read. */
export interface AnthropicContentBlock {
  readonly type: string;
}

/** A `tool_use` block of an assistant message. */
export interface AnthropicToolUseBlock extends AnthropicContentBlock {
  readonly type: 'tool_use';
  readonly id: string;
  readonly name: string;
  readonly input: unknown;
}

/** An assistant message, or a Messages API response (`Message`). */
export interface AnthropicAssistantMessage {
  readonly content: string | readonly AnthropicContentBlock[];
}

/** A `tool_result` block as the API takes it. */
export interface AnthropicToolResultBlockParam {
  type: 'tool_result';
  tool_use_id: string;
  content: string;
  is_error?: boolean;
}

/** The user message that answers an assistant message's tool calls. */
export interface AnthropicToolResultMessage {
  role: 'user';
  content: AnthropicToolResultBlockParam[];
}

/** Read the `tool_use` blocks of an assistant message, in order. */
export function anthropicToolCalls(message: AnthropicAssistantMessage): TurnCalls {
  if (typeof message.content === 'string') return { entries: [] };
  const entries: TurnCallEntry[] = [];
  for (const block of message.content) {
    if (block.type !== 'tool_use') continue;
    const { id, name, input } = block as Partial<AnthropicToolUseBlock>;
    entries.push(toolCallEntry('Anthropic', id, name, input));
  }
  return { entries };
}

/** The user message with one `tool_result` block per call, in the calls' order. */
export function anthropicToolResultMessage(turn: TurnCalls, results: readonly ToolResultBlock[]): AnthropicToolResultMessage {
  const content = pairResults(turn, results, (call, result): AnthropicToolResultBlockParam => ({
    type: 'tool_result',
    tool_use_id: call.id,
    content: result.content,
    ...(result.is_error ? { is_error: true } : {}),
  }));
  return { role: 'user', content };
}
