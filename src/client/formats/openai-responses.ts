/**
 * OpenAI Responses: `function_call` output items become calls (arguments are
 * a JSON string, parsed here), and results become `function_call_output`
 * input items with the same `call_id`, in order. Declared structurally; the
 * SDK is not needed at run time.
 */
import type { ToolResultBlock } from '../../bullmq/job-data.js';
import { pairResults, type TurnCalls } from '../turn.js';
import { callFromJsonArguments } from './json-arguments.js';

/** Any output item; only `function_call` ones are read. */
export interface OpenAIResponsesOutputItem {
  readonly type: string;
}

/** A `function_call` output item. */
export interface OpenAIResponsesFunctionCall extends OpenAIResponsesOutputItem {
  readonly type: 'function_call';
  readonly call_id: string;
  readonly name: string;
  readonly arguments: string;
}

/** A response (or anything with its `output` items). */
export interface OpenAIResponsesResponse {
  readonly output: readonly OpenAIResponsesOutputItem[];
}

/** The input item that answers one function call. */
export interface OpenAIResponsesFunctionCallOutput {
  type: 'function_call_output';
  call_id: string;
  output: string;
}

/** Read the `function_call` items of a response (or of its `output` array), in order. */
export function openAIResponsesToolCalls(response: OpenAIResponsesResponse | readonly OpenAIResponsesOutputItem[]): TurnCalls {
  const items: readonly OpenAIResponsesOutputItem[] = 'output' in response ? response.output : response;
  const entries = items
    .filter((item) => item.type === 'function_call')
    .map((item) => {
      const { call_id: callId, name, arguments: text } = item as Partial<OpenAIResponsesFunctionCall>;
      return callFromJsonArguments('OpenAI Responses', callId, name, text);
    });
  return { entries };
}

/** One `function_call_output` item per call, in the calls' order, for the next request's `input`. */
export function openAIResponsesToolOutputs(turn: TurnCalls, results: readonly ToolResultBlock[]): OpenAIResponsesFunctionCallOutput[] {
  return pairResults(turn, results, (call, result) => ({ type: 'function_call_output', call_id: call.id, output: result.content }));
}
