/**
 * Decodes values a model double-encoded as JSON strings, where the schema
 * proves an object or array belongs.
 */
import type { z } from 'zod';
import { schemaViewOf, type SchemaNode, type SchemaView } from './schema-shape.js';
import { isRecord, setOwn, type AssistantMessage, type ContentBlock, type InputPath, type ToolSchemas } from './types.js';

/** The result of decoding one tool input. */
export interface DecodedInput {
  /** The input with every provably double-encoded value decoded; the same reference when nothing changed. */
  input: unknown;
  /** Where a string was replaced by the object or array it encoded, in visiting order. */
  decodedPaths: InputPath[];
}

/**
 * How deep into an input the decoder looks. Deeper values are left as they are;
 * the limit only exists so that hostile input cannot exhaust the stack.
 */
export const DECODE_MAX_DEPTH = 64;

/**
 * Decodes the values of one tool input that a model sent as JSON text where the
 * schema expects structured data.
 *
 * A string is replaced only when all of these hold: the schema at that place
 * accepts an object or an array, it does not accept a string (so the string
 * could never have been meant literally), `JSON.parse` succeeds, and the
 * parsed value has an accepted shape (a non-null, non-array object for
 * `object`; an array for `array`). The input as a whole, its properties, and
 * the elements of its arrays are all visited, including the inside of values
 * that were just decoded, so applying the function a second time changes
 * nothing. The given input is never mutated.
 *
 * @param input - The tool input as the model sent it.
 * @param schema - The tool's input schema; `null` disables decoding.
 */
export function decodeToolInput(input: unknown, schema: z.ZodType | null): DecodedInput {
  const decodedPaths: InputPath[] = [];
  const view = schema === null ? null : schemaViewOf(schema);
  if (view === null) return { input, decodedPaths };
  const decoded = visit(view, input, view.root, [], decodedPaths);
  return { input: decoded, decodedPaths };
}

/**
 * Decodes double-encoded tool inputs across an assistant message.
 *
 * Each `tool_use` block whose tool has a schema goes through
 * {@link decodeToolInput}. Only `input` values are ever replaced: the returned
 * message has the same blocks in the same order with the same ids and names,
 * and every other block is the very same object. Tools with a `null` schema
 * and unknown tools are left alone.
 *
 * @returns The corrected message, or `null` when no value was provably double-encoded.
 */
export function decodeDoubleEncodedInputs(message: AssistantMessage, tools: ToolSchemas): AssistantMessage | null {
  let changed = false;
  const content = message.content.map((block): ContentBlock => {
    if (!isRecord(block) || block.type !== 'tool_use' || typeof block.name !== 'string') return block;
    const schema = tools.get(block.name);
    if (schema === undefined || schema === null) return block;
    const result = decodeToolInput(block.input, schema);
    if (result.decodedPaths.length === 0) return block;
    changed = true;
    return { ...block, input: result.input } as ContentBlock;
  });
  return changed ? { ...message, content } : null;
}

function visit(view: SchemaView, value: unknown, node: SchemaNode, path: InputPath, out: InputPath[]): unknown {
  if (path.length > DECODE_MAX_DEPTH) return value;
  let current = value;
  if (typeof value === 'string') {
    const parsed = parseIfExpected(view, value, node);
    if (parsed !== undefined) {
      current = parsed;
      out.push(path);
    }
  }
  if (Array.isArray(current)) return visitArray(view, current, node, path, out);
  if (isRecord(current)) return visitObject(view, current, node, path, out);
  return current;
}

function parseIfExpected(view: SchemaView, text: string, node: SchemaNode): unknown {
  const kinds = view.kinds(node);
  if (kinds.has('any') || kinds.has('string')) return undefined;
  const wantsObject = kinds.has('object');
  const wantsArray = kinds.has('array');
  if (!wantsObject && !wantsArray) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (wantsArray && Array.isArray(parsed)) return parsed;
  if (wantsObject && isRecord(parsed)) return parsed;
  return undefined;
}

function visitArray(view: SchemaView, array: unknown[], node: SchemaNode, path: InputPath, out: InputPath[]): unknown {
  const branch = view.onlyBranch(node, 'array');
  if (branch === undefined) return array;
  let copy: unknown[] | undefined;
  array.forEach((element, index) => {
    const child = view.itemSchema(branch, index);
    if (child === undefined) return;
    const next = visit(view, element, child, [...path, index], out);
    if (next !== element) {
      copy ??= array.slice();
      copy[index] = next;
    }
  });
  return copy ?? array;
}

function visitObject(view: SchemaView, object: Record<string, unknown>, node: SchemaNode, path: InputPath, out: InputPath[]): unknown {
  const branch = view.onlyBranch(node, 'object');
  if (branch === undefined) return object;
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(object)) {
    const child = view.propertySchema(branch, key);
    if (child === undefined) continue;
    const element = object[key];
    const next = visit(view, element, child, [...path, key], out);
    if (next !== element) {
      copy ??= { ...object };
      setOwn(copy, key, next);
    }
  }
  return copy ?? object;
}
