/**
 * Whether a `tool_use` block may run as it stands; `zodToolUseValidator` for
 * zod-described tools.
 */
import type { z } from 'zod';
import { isRecord, type AssistantMessage, type ToolSchemas, type ToolUseBlock, type ValidationIssue } from './types.js';

/**
 * Decides whether a `tool_use` block may run as it stands. Hosts may supply
 * their own; {@link zodToolUseValidator} covers tools described by zod schemas.
 */
export interface ToolUseValidator {
  /** The problems with one call; an empty array means the call is valid. */
  validate(block: ToolUseBlock): ValidationIssue[];
}

/**
 * A validator backed by the tools' zod schemas.
 *
 * A name missing from `tools` yields an `unknown_tool` issue; a `null` schema
 * accepts any input; otherwise every zod issue becomes an `invalid_input`
 * issue at the same path.
 */
export function zodToolUseValidator(tools: ToolSchemas): ToolUseValidator {
  return {
    validate(block: ToolUseBlock): ValidationIssue[] {
      const schema = tools.get(block.name);
      if (schema === undefined) {
        return [{ code: 'unknown_tool', toolName: block.name, toolUseId: block.id, path: [], message: `no tool is named "${block.name}"` }];
      }
      if (schema === null) return [];
      const outcome = parseToolInput(schema, block.input, block.name);
      return outcome.ok ? [] : outcome.issues.map((issue) => ({ ...issue, toolUseId: block.id }));
    },
  };
}

/** The outcome of checking one input against a zod schema. */
export type ToolInputParseOutcome = { ok: true; data: unknown } | { ok: false; issues: ValidationIssue[] };

/**
 * Parses one input with a zod schema, reporting failures as `invalid_input`
 * issues for `toolName`. A schema that throws while parsing (a failing
 * transform, an async refinement) counts as one issue rather than escaping.
 */
export function parseToolInput(schema: z.ZodType, input: unknown, toolName: string): ToolInputParseOutcome {
  try {
    return outcomeOf(schema.safeParse(input), toolName);
  } catch (error) {
    return threw(error, toolName);
  }
}

/**
 * {@link parseToolInput} for schemas with asynchronous refinements or
 * transforms, which a synchronous parse reports as an issue.
 */
export async function parseToolInputAsync(schema: z.ZodType, input: unknown, toolName: string): Promise<ToolInputParseOutcome> {
  try {
    return outcomeOf(await schema.safeParseAsync(input), toolName);
  } catch (error) {
    return threw(error, toolName);
  }
}

function outcomeOf(result: ReturnType<z.ZodType['safeParse']>, toolName: string): ToolInputParseOutcome {
  if (result.success) return { ok: true, data: result.data };
  return {
    ok: false,
    issues: result.error.issues.map((issue) => ({
      code: 'invalid_input' as const,
      toolName,
      path: issue.path.map((segment) => (typeof segment === 'symbol' ? String(segment) : segment)),
      message: issue.message,
    })),
  };
}

function threw(error: unknown, toolName: string): ToolInputParseOutcome {
  const reason = error instanceof Error ? error.message : String(error);
  return {
    ok: false,
    issues: [{ code: 'invalid_input', toolName, path: [], message: `the schema could not check this input: ${reason}` }],
  };
}

/**
 * Validates every `tool_use` block of a message, in order.
 *
 * A block typed `tool_use` whose id or name is not a string cannot be checked
 * against any tool and is reported as `unknown_tool`.
 */
export function validateMessage(message: AssistantMessage, validator: ToolUseValidator): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  for (const block of message.content) {
    if (!isRecord(block) || block.type !== 'tool_use') continue;
    if (typeof block.id !== 'string' || typeof block.name !== 'string') {
      issues.push({
        code: 'unknown_tool',
        toolName: typeof block.name === 'string' ? block.name : '',
        path: [],
        message: 'a tool_use block needs a string id and a string name',
      });
      continue;
    }
    issues.push(...validator.validate(block as ToolUseBlock));
  }
  return issues;
}
