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
  /**
   * The same, for checks that may await (a schema with asynchronous
   * refinements or transforms); `repair` uses it when given, `validate`
   * otherwise.
   */
  validateAsync?(block: ToolUseBlock): Promise<ValidationIssue[]>;
}

/**
 * A validator backed by the tools' zod schemas.
 *
 * A name missing from `tools` yields an `unknown_tool` issue; a `null` schema
 * accepts any input; otherwise every zod issue becomes an `invalid_input`
 * issue at the same path.
 */
export function zodToolUseValidator(tools: ToolSchemas): ToolUseValidator {
  // The block's schema, or its issues when there is nothing to parse (no such tool; a null schema accepts anything).
  const schemaOf = (block: ToolUseBlock): z.ZodType | ValidationIssue[] => {
    const schema = tools.get(block.name);
    if (schema === undefined) {
      return [{ code: 'unknown_tool', toolName: block.name, toolUseId: block.id, path: [], message: `no tool is named "${block.name}"` }];
    }
    return schema ?? [];
  };
  const issuesOf = (block: ToolUseBlock, outcome: ToolInputParseOutcome): ValidationIssue[] =>
    outcome.ok ? [] : outcome.issues.map((issue) => ({ ...issue, toolUseId: block.id }));
  return {
    validate(block) {
      const schema = schemaOf(block);
      return Array.isArray(schema) ? schema : issuesOf(block, parseToolInput(schema, block.input, block.name));
    },
    async validateAsync(block) {
      const schema = schemaOf(block);
      return Array.isArray(schema) ? schema : issuesOf(block, await parseToolInputAsync(schema, block.input, block.name));
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
  const { blocks, issues } = toolUseBlocksOf(message);
  for (const block of blocks) issues.push(...validator.validate(block));
  return issues;
}

/** {@link validateMessage} with the validator's `validateAsync` where it has one (what `repair` runs). */
export async function validateMessageAsync(message: AssistantMessage, validator: ToolUseValidator): Promise<ValidationIssue[]> {
  const { blocks, issues } = toolUseBlocksOf(message);
  for (const block of blocks) issues.push(...(await (validator.validateAsync?.(block) ?? validator.validate(block))));
  return issues;
}

/** The message's `tool_use` blocks that can be checked, and an issue for each that cannot. */
function toolUseBlocksOf(message: AssistantMessage): { blocks: ToolUseBlock[]; issues: ValidationIssue[] } {
  const blocks: ToolUseBlock[] = [];
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
    blocks.push(block as ToolUseBlock);
  }
  return { blocks, issues };
}
