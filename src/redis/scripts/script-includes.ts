/**
 * `--- @include "<name>"` lines in the Lua scripts: each is replaced by
 * `lua/includes/<name>.lua` (itself expanded the same way) when a script is
 * read, so Redis only ever sees one self-contained script per call.
 */
import { ScriptIncludeError } from './script-errors.js';

/** A line `--- @include …`; what follows `@include` is checked by {@link expandIncludes}. */
const INCLUDE_LINE = /^\s*---\s*@include\b(.*)$/;
/** `"<name>"` or `"<name>.lua"`, a plain file name inside `lua/includes/`. */
const INCLUDE_NAME = /^\s+"([A-Za-z0-9_-]+)(?:\.lua)?"\s*$/;

/**
 * Replaces every `--- @include "<name>"` line of `source` (the text of
 * `script`) with the text `readInclude(name)` returns, expanded the same way.
 * An include that was already expanded earlier in the same script, directly or
 * through another include, is dropped, so each is defined once and before its
 * first use. `readInclude` returns `undefined` for an include that does not
 * exist. Throws {@link ScriptIncludeError} for a missing include, a malformed
 * include line, or a cycle.
 */
export function expandIncludes(script: string, source: string, readInclude: (name: string) => string | undefined): string {
  const done = new Set<string>();
  const expand = (text: string, chain: readonly string[]): string => {
    const out: string[] = [];
    for (const line of text.split('\n')) {
      const directive = INCLUDE_LINE.exec(line);
      if (!directive) {
        out.push(line);
        continue;
      }
      const name = INCLUDE_NAME.exec(directive[1] ?? '')?.[1];
      if (name === undefined) throw new ScriptIncludeError(script, line.trim(), 'malformed', chain);
      if (chain.includes(name)) throw new ScriptIncludeError(script, name, 'cycle', chain);
      if (done.has(name)) continue;
      const body = readInclude(name);
      if (body === undefined) throw new ScriptIncludeError(script, name, 'missing', chain);
      done.add(name);
      out.push(expand(body.replace(/\r?\n$/, ''), [...chain, name]));
    }
    return out.join('\n');
  };
  return expand(source, []);
}
