/**
 * The errors of the Lua script loader: a script file that is misnamed or
 * whose header disagrees with its name, a script run by a name no file has,
 * and an `@include` that cannot be expanded.
 */
import { ToolReceiptsError } from '../../core/errors.js';

/**
 * A script was run by a name no file in `lua/` has, or run with fewer keys
 * than it takes, or a file in `lua/` is misnamed or opens with a header that
 * disagrees with its name (refused when the directory is loaded). `file`
 * names the file when one is at fault.
 */
export class ScriptDefinitionError extends ToolReceiptsError {
  readonly code = 'redis.script_definition';
  readonly file: string | undefined;

  constructor(message: string, file?: string) {
    super(message);
    this.file = file;
  }
}

/** Why an `@include` line could not be expanded. */
export type ScriptIncludeProblem = 'missing' | 'cycle' | 'malformed';

/**
 * A script's `--- @include` line names no file in `lua/includes/`, is not of
 * the form `--- @include "<name>"`, or includes form a cycle. `chain` is the
 * path of includes from the script down to the failing one.
 */
export class ScriptIncludeError extends ToolReceiptsError {
  readonly code = 'redis.script_include';
  readonly script: string;
  readonly include: string;
  readonly problem: ScriptIncludeProblem;
  readonly chain: readonly string[];

  constructor(script: string, include: string, problem: ScriptIncludeProblem, chain: readonly string[]) {
    const via = chain.length > 0 ? ` (via ${chain.join(' -> ')})` : '';
    const what =
      problem === 'missing'
        ? `includes ${JSON.stringify(include)}${via}, but lua/includes/${include}.lua does not exist`
        : problem === 'cycle'
          ? `has an include cycle: ${[...chain, include].join(' -> ')}`
          : `has a malformed include line ${JSON.stringify(include)}${via}; write --- @include "<name>"`;
    super(`script ${script} ${what}`);
    this.script = script;
    this.include = include;
    this.problem = problem;
    this.chain = chain;
  }
}
