/**
 * The deterministic repairs of a tool input (decode, aliases, dropped nulls),
 * each recorded as a correction.
 */
import type { z } from 'zod';
import { toolArgumentsFor, type AliasConflict, type ParamAliases } from './aliases.js';
import { decodeToolInput } from './decode.js';
import { isRecord, type AssistantMessage, type ContentBlock, type InputPath, type ToolSchemas } from './types.js';

/** One deterministic change made to a tool input. */
export type InputCorrection =
  { kind: 'decoded'; path: InputPath } | { kind: 'alias'; from: string; to: string } | { kind: 'dropped_null'; key: string };

/** The result of {@link normalizeToolInput}. */
export interface NormalizedInput {
  /** The input after the corrections; exactly the given input when there are none. */
  input: unknown;
  corrections: InputCorrection[];
  /** Set when a parameter arrived under several keys; `input` is then left as sent. */
  conflict?: AliasConflict;
}

/**
 * Applies every correction that follows from the schema and the alias table
 * alone, without validating: decode double-encoded objects and arrays, rename
 * alias keys, drop `null`s of optional or defaulted parameters, and decode
 * once more so that a value sent under an alias is covered too. Each step is a
 * fixed function of what the model sent, so the result never holds a value the
 * model did not write, and applying it twice changes nothing more.
 *
 * On an alias conflict the input is returned as sent (not even decoded), with
 * `conflict` set.
 */
export function normalizeToolInput(rawInput: unknown, tool: { schema: z.ZodType | null; aliases?: ParamAliases }): NormalizedInput {
  const first = decodeToolInput(rawInput, tool.schema);
  const named = toolArgumentsFor(first.input, tool);
  if (named.conflict !== undefined) return { input: rawInput, corrections: [], conflict: named.conflict };
  const second = decodeToolInput(named.args, tool.schema);
  const corrections: InputCorrection[] = [
    ...first.decodedPaths.map((path): InputCorrection => ({ kind: 'decoded', path })),
    ...named.corrections.map(({ from, to }): InputCorrection => ({ kind: 'alias', from, to })),
    ...named.dropped.map((key): InputCorrection => ({ kind: 'dropped_null', key })),
    ...second.decodedPaths.map((path): InputCorrection => ({ kind: 'decoded', path })),
  ];
  return { input: corrections.length === 0 ? rawInput : second.input, corrections };
}

/**
 * {@link normalizeToolInput} over every `tool_use` block of a message whose
 * tool is known. Like `decodeDoubleEncodedInputs`, only `input` values change:
 * blocks, order, ids and names are kept by construction.
 *
 * @param aliases - Alias tables by tool name, for tools that have them.
 * @returns The corrected message, or `null` when nothing changed.
 */
export function normalizeMessageInputs(
  message: AssistantMessage,
  tools: ToolSchemas,
  aliases?: ReadonlyMap<string, ParamAliases>,
): AssistantMessage | null {
  let changed = false;
  const content = message.content.map((block): ContentBlock => {
    if (!isRecord(block) || block.type !== 'tool_use' || typeof block.name !== 'string') return block;
    const schema = tools.get(block.name);
    if (schema === undefined) return block;
    const toolAliases = aliases?.get(block.name);
    const result = normalizeToolInput(block.input, toolAliases === undefined ? { schema } : { schema, aliases: toolAliases });
    if (result.corrections.length === 0) return block;
    changed = true;
    return { ...block, input: result.input } as ContentBlock;
  });
  return changed ? { ...message, content } : null;
}
