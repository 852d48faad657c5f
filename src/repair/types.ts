/**
 * The message shapes repair works on: `tool_use` blocks and the assistant
 * message around them.
 */
import type { z } from 'zod';

/**
 * A tool call inside an assistant message: the model asks for tool `name` to
 * run with `input`, and `id` ties the later tool result back to this call.
 */
export interface ToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: unknown;
  [key: string]: unknown;
}

/** A plain text block of an assistant message. */
export interface TextBlock {
  type: 'text';
  text: string;
  [key: string]: unknown;
}

/**
 * Any block of an assistant message. Blocks other than `tool_use` are opaque
 * to this layer: they are carried along untouched and compared structurally.
 */
export type ContentBlock = ToolUseBlock | TextBlock | { type: string; [key: string]: unknown };

/** An assistant turn, in the shape used by the Anthropic Messages API. */
export interface AssistantMessage {
  role: 'assistant';
  content: ContentBlock[];
  [key: string]: unknown;
}

/**
 * The input schemas of the tools a model may call, by tool name.
 *
 * A `null` value means the tool exists but its input is not described, so any
 * input is accepted and nothing is decoded. A name missing from the map is an
 * unknown tool.
 */
export type ToolSchemas = ReadonlyMap<string, z.ZodType | null>;

/** A location inside a tool input: object keys and array indexes, outermost first. */
export type InputPath = ReadonlyArray<string | number>;

/** Why a tool call, or one tool input, cannot be used as it stands. */
export type ValidationIssueCode = 'unknown_tool' | 'invalid_input' | 'alias_conflict';

/** One problem found in a tool call. */
export interface ValidationIssue {
  code: ValidationIssueCode;
  /** The tool the call names. */
  toolName: string;
  /** The id of the `tool_use` block, when the issue came from a message. */
  toolUseId?: string;
  /** Where in the input the problem is; empty for the input as a whole. */
  path: InputPath;
  /** A human-readable explanation, suitable for logs and for a reshaper prompt. */
  message: string;
}

/** Whether a value is a non-null object that is not an array. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether a content block is a `tool_use` block with a string id and name. */
export function isToolUseBlock(block: unknown): block is ToolUseBlock {
  return isRecord(block) && block.type === 'tool_use' && typeof block.id === 'string' && typeof block.name === 'string';
}

/** The `tool_use` blocks of a message, in order. */
export function toolUses(message: AssistantMessage): ToolUseBlock[] {
  return message.content.filter(isToolUseBlock);
}

/**
 * Defines an own, enumerable property. Used instead of `obj[key] = value` so
 * that a key such as `__proto__` arriving from model output stays a plain key.
 */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
