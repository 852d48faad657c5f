/**
 * OpenAI Chat Completions: an assistant message's `tool_calls` become calls
 * (their `function.arguments` is a JSON string, parsed here), and results
 * become `role: 'tool'` messages with `tool_call_id`, one per call, in order.
 * Declared structurally; the SDK is not needed at run time.
 */
import type { ToolResultBlock } from '../../bullmq/job-data.js';
import { pairResults, rejectedCall, requireCallId, type TurnCalls } from '../turn.js';
import { callFromJsonArguments } from './json-arguments.js';

/** One entry of `tool_calls`; only `function` calls can be run. */
export interface OpenAIChatToolCall {
  readonly id: string;
  readonly type: string;
  readonly function?: { readonly name: string; readonly arguments: string };
}

/** An assistant message (`choices[i].message`). */
export interface OpenAIChatAssistantMessage {
  readonly tool_calls?: readonly OpenAIChatToolCall[] | null;
}

/** The message that answers one tool call. */
export interface OpenAIChatToolMessage {
  role: 'tool';
  tool_call_id: string;
  content: string;
}

/** Read an assistant message's `tool_calls`, in order. Arguments that are not JSON become refused calls. */
export function openAIChatToolCalls(message: OpenAIChatAssistantMessage): TurnCalls {
  const entries = (message.tool_calls ?? []).map((toolCall) => {
    const { id, function: fn } = toolCall;
    if (toolCall.type !== 'function' || !fn) {
      requireCallId('OpenAI Chat', id);
      return rejectedCall(id, '', `tool call ${id} is of type ${JSON.stringify(toolCall.type)}; only function tools are run here`);
    }
    return callFromJsonArguments('OpenAI Chat', id, fn.name, fn.arguments);
  });
  return { entries };
}

/** One `role: 'tool'` message per call, in the calls' order; an error result's text says so itself. */
export function openAIChatToolMessages(turn: TurnCalls, results: readonly ToolResultBlock[]): OpenAIChatToolMessage[] {
  return pairResults(turn, results, (call, result) => ({ role: 'tool', tool_call_id: call.id, content: result.content }));
}
