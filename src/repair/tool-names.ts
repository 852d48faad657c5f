/**
 * Refuses a tool list in which two tools share a name.
 */
import { DuplicateToolNameError } from './errors.js';

/**
 * Throws {@link DuplicateToolNameError} for the first name that more than one
 * tool in the list carries. Names are compared exactly, as providers compare
 * them. Run it before offering the tools to a model or routing calls by name.
 */
export function assertUniqueToolNames(tools: ReadonlyArray<{ readonly name: string }>): void {
  const counts = new Map<string, number>();
  for (const tool of tools) counts.set(tool.name, (counts.get(tool.name) ?? 0) + 1);
  for (const [name, count] of counts) {
    if (count > 1) throw new DuplicateToolNameError(name, count);
  }
}
