/**
 * The errors of argument repair (duplicate tool names among them).
 */
import { ToolReceiptsError } from '../core/errors.js';

/**
 * Two tools in one list share a name. Providers reject such a tool list and
 * calls are routed by name, so this is always a configuration bug.
 */
export class DuplicateToolNameError extends ToolReceiptsError {
  readonly code = 'tool.duplicate_name';

  /**
   * @param toolName - The name used more than once.
   * @param count - How many tools in the list carry it.
   */
  constructor(
    readonly toolName: string,
    readonly count: number,
  ) {
    super(`tool name "${toolName}" is used by ${count} tools; every tool offered to a model needs its own name, so rename all but one`);
  }
}

/**
 * A tool call supplied one parameter under two keys (the parameter and an
 * alias, or two aliases), so there is no honest way to choose a value. The
 * call is failed before it starts: nothing has run.
 */
export class ArgumentConflictError extends ToolReceiptsError {
  readonly code = 'tool_args.alias_conflict';
  /** Always true: this failure is raised before the tool body runs. */
  readonly neverStarted = true;

  /**
   * @param toolName - The tool that was called.
   * @param param - The parameter that received more than one value.
   * @param keys - The keys of the call that all name that parameter.
   */
  constructor(
    readonly toolName: string,
    readonly param: string,
    readonly keys: readonly string[],
  ) {
    super(`tool "${toolName}" got parameter "${param}" under several keys (${keys.map((k) => `"${k}"`).join(', ')}); send it once`);
  }
}

/** A tool's alias table is inconsistent; raised when the tool is defined. */
export class InvalidAliasError extends ToolReceiptsError {
  readonly code = 'tool_args.invalid_alias';

  /** @param problems - One sentence per inconsistency found. */
  constructor(readonly problems: readonly string[]) {
    super(`invalid argument aliases: ${problems.join('; ')}`);
  }
}
