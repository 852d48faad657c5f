/**
 * A model message's tool calls as an adapter reads them: calls to submit, and
 * calls refused before they are.
 */
import { ToolReceiptsError } from '../core/errors.js';
import type { ToolResultBlock } from '../bullmq/job-data.js';
import type { ToolCallClient, ToolCallInput, TurnSubmission } from './client.js';

/** One tool call of a model's message, as an adapter read it. */
export type TurnCallEntry =
  /** Submitted to the workers. */
  | { readonly kind: 'call'; readonly call: ToolCallInput }
  /** Refused before submitting (e.g. arguments that are not JSON); `result` is the model's answer. */
  | { readonly kind: 'rejected'; readonly id: string; readonly name: string; readonly result: ToolResultBlock };

/** Every tool call of one assistant message, in the message's order. */
export interface TurnCalls {
  readonly entries: readonly TurnCallEntry[];
}

/** A model's message could not be read as tool calls at all (e.g. a call without an id to answer). */
export class InvalidAssistantMessageError extends ToolReceiptsError {
  readonly code = 'format.invalid_message';
  constructor(format: string, detail: string) {
    super(`cannot read the tool calls of this ${format} message: ${detail}`);
  }
}

/** Results were given that do not pair one to one with a message's tool calls. */
export class ResultCountMismatchError extends ToolReceiptsError {
  readonly code = 'format.result_count';
  constructor(expected: number, got: number) {
    super(`expected ${expected} tool results, one per tool call, got ${got}; pass the results of this message's own calls`);
  }
}

/** The error result of a call refused before any worker ran it, shaped like a worker's. */
export const rejectedResult = (id: string, message: string): ToolResultBlock => ({
  type: 'tool_result',
  tool_use_id: id,
  content: message,
  is_error: true,
  outcome: 'rejected',
});

/** What the model reads for a call refused as `turn.conflict`: it was not run, and why. */
export const conflictResult = (toolCallId: string, toolName: string): ToolResultBlock =>
  rejectedResult(
    toolCallId,
    `The ${toolName} call ${toolCallId} was not run: the id it was submitted under already names a different call ` +
      'of this conversation, so it was refused before any worker saw it and nothing was done for it. ' +
      'This is a clash of ids in the program that calls the tools, not a failure of the tool or of its input.',
  );

/** A refused call and its error result. */
export function rejectedCall(id: string, name: string, message: string): TurnCallEntry {
  return { kind: 'rejected', id, name, result: rejectedResult(id, message) };
}

/** The id a call is answered by; without one, the message cannot be answered. */
export function requireCallId(format: string, id: unknown): asserts id is string {
  if (typeof id !== 'string' || id === '') throw new InvalidAssistantMessageError(format, 'a tool call has no id');
}

/**
 * One tool call as read from a message: a call without an id cannot be
 * answered (a typed error); one without a tool name is refused.
 */
export function toolCallEntry(format: string, id: unknown, name: unknown, input: unknown): TurnCallEntry {
  requireCallId(format, id);
  if (typeof name !== 'string' || name === '')
    return rejectedCall(id, '', `tool call ${id} names no tool; call one of the listed tools by name`);
  return { kind: 'call', call: { id, name, input } };
}

/** A call's id and tool name, whichever way it was read. */
export const entryIdentity = (entry: TurnCallEntry): { id: string; name: string } =>
  entry.kind === 'call' ? { id: entry.call.id, name: entry.call.name } : entry;

/** The calls to submit, in order. */
export const callsToSubmit = (turn: TurnCalls): ToolCallInput[] =>
  turn.entries.flatMap((entry) => (entry.kind === 'call' ? [entry.call] : []));

/**
 * One block per entry, in the message's order: the submitted calls' results
 * (as `submit` returned them, in order) with the refused calls' results
 * between them.
 */
export function resultsInOrder(turn: TurnCalls, submitted: readonly ToolResultBlock[]): ToolResultBlock[] {
  let next = 0;
  const results = turn.entries.map((entry) => (entry.kind === 'rejected' ? entry.result : submitted[next++]));
  if (next !== submitted.length || results.some((r) => r === undefined)) {
    throw new ResultCountMismatchError(callsToSubmit(turn).length, submitted.length);
  }
  return results as ToolResultBlock[];
}

/**
 * Submit a message's calls and return one block per call in the message's
 * order. A message whose every call was refused enqueues nothing.
 */
export async function submitTurnCalls(
  client: ToolCallClient,
  turn: TurnCalls,
  submission: Omit<TurnSubmission, 'calls' | 'approvals'>,
): Promise<ToolResultBlock[]> {
  const calls = callsToSubmit(turn);
  const submitted = calls.length === 0 ? [] : await client.submit({ ...submission, calls });
  return resultsInOrder(turn, submitted);
}

/** Pair each entry with its result; the adapters shape each pair for their API. */
export function pairResults<T>(
  turn: TurnCalls,
  results: readonly ToolResultBlock[],
  shape: (call: { id: string; name: string }, result: ToolResultBlock) => T,
): T[] {
  if (results.length !== turn.entries.length) {
    throw new ResultCountMismatchError(turn.entries.length, results.length);
  }
  return turn.entries.map((entry, i) => shape(entryIdentity(entry), results[i]!));
}
