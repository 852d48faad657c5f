/**
 * `prepareToolInput`: a tool input normalized, validated, and repaired by a
 * reshaper when allowed.
 */
import type { z } from 'zod';
import type { ParamAliases } from './aliases.js';
import { normalizeToolInput, type InputCorrection, type NormalizedInput } from './normalize.js';
import type { ValidationIssue } from './types.js';
import { parseToolInput, parseToolInputAsync, type ToolInputParseOutcome } from './validator.js';

/** What {@link prepareToolInput} needs to know about a tool. */
export interface PreparableTool {
  name: string;
  /** The input schema; `null` accepts any input. */
  schema: z.ZodType | null;
  aliases?: ParamAliases;
  /** Whether a call whose input stays invalid must be refused outright rather than repaired. */
  destructive?: boolean;
}

/** Why {@link prepareToolInput} did not produce a usable input. */
export type PrepareFailureReason = 'invalid' | 'refused_destructive' | 'alias_conflict';

/** The result of {@link prepareToolInput}. */
export type PreparedToolInput =
  | {
      ok: true;
      /** The corrected input in its raw form, as it should be recorded and hashed. */
      input: unknown;
      /** What the schema made of `input` (defaults applied, transforms run). */
      parsed: unknown;
      corrections: InputCorrection[];
    }
  | {
      ok: false;
      reason: PrepareFailureReason;
      issues: ValidationIssue[];
      /** The changes made before the failure was found (none after an alias conflict). */
      corrections: InputCorrection[];
    };

/**
 * Turns a tool input as a model sent it into one that is safe to claim and
 * run, using only changes that can be proven from the schema; it never
 * invents a value.
 *
 * The steps: the corrections of {@link normalizeToolInput} (decode
 * double-encoded objects and arrays, rename alias keys, drop `null`s of
 * optional or defaulted parameters), then validation. The corrections apply
 * to destructive tools as well, since each is a fixed function of what the
 * model sent and of the tool's own declarations. If the input is still invalid after them, a destructive tool
 * fails with `refused_destructive` (the caller must not hand it to a
 * reshaper), any other with `invalid`. A parameter given under two keys fails
 * with `alias_conflict`, which is a failure that never started.
 *
 * Pure: the given input is not mutated.
 */
export function prepareToolInput(rawInput: unknown, tool: PreparableTool): PreparedToolInput {
  const normalized = normalizeToolInput(rawInput, tool);
  if (normalized.conflict !== undefined || tool.schema === null) return settle(normalized, tool, null);
  return settle(normalized, tool, parseToolInput(tool.schema, normalized.input, tool.name));
}

/**
 * {@link prepareToolInput} with asynchronous validation, for schemas that
 * have async refinements or transforms.
 */
export async function prepareToolInputAsync(rawInput: unknown, tool: PreparableTool): Promise<PreparedToolInput> {
  const normalized = normalizeToolInput(rawInput, tool);
  if (normalized.conflict !== undefined || tool.schema === null) return settle(normalized, tool, null);
  return settle(normalized, tool, await parseToolInputAsync(tool.schema, normalized.input, tool.name));
}

function settle(normalized: NormalizedInput, tool: PreparableTool, parsed: ToolInputParseOutcome | null): PreparedToolInput {
  const { input, corrections, conflict } = normalized;
  if (conflict !== undefined) {
    const message = `parameter "${conflict.param}" was sent under several keys: ${conflict.keys.join(', ')}`;
    return {
      ok: false,
      reason: 'alias_conflict',
      issues: [{ code: 'alias_conflict', toolName: tool.name, path: [conflict.param], message }],
      corrections,
    };
  }
  if (parsed === null) return { ok: true, input, parsed: input, corrections };
  if (parsed.ok) return { ok: true, input, parsed: parsed.data, corrections };
  const reason = tool.destructive === true ? 'refused_destructive' : 'invalid';
  return { ok: false, reason, issues: parsed.issues, corrections };
}
