/**
 * A script as a Redis Function library (Redis 7+). Redis runs an EVAL
 * script's whole chunk on every call, so each `local function` its includes
 * bring in is a new closure each time: for the claim and the complete about
 * an eighth of what the server spends on them. A library runs its top level
 * once, when it is loaded, and FCALL then runs only the function it
 * registered. So the library defines, once, the script's top-level functions
 * and constants that need nothing of a call, and registers the rest of the
 * script, unchanged, as the function's body.
 */
import { createHash } from 'node:crypto';
import type { ScriptFunction } from '../connection/clients/types.js';
import { blankedSpan, tokensOf, topLevelOf, type Token } from './lua-scan.js';

/**
 * Which rewrite made a library: part of its name, so a release that hoists
 * differently never takes another's library of the same script for its own.
 */
const LIBRARY_FORM = 'trc-fn-1';

/** `local A, B = 1, 'text'`: a top-level line of literal numbers and short strings only. */
const CONSTANT_LINE =
  /^local ([A-Za-z_]\w*(?:, *[A-Za-z_]\w*)*) *= *((?:-?\d+(?:\.\d+)?|'[^'\\\n]*')(?: *, *(?:-?\d+(?:\.\d+)?|'[^'\\\n]*'))*)[ \t]*(?=\n|$)/;
/** The names a `local a, b` statement declares. */
const DECLARED = /^local\s+([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)/;
/** After a name (matched from where it ends): an assignment to it (`name =`, `name, other =`), not a comparison. */
const ASSIGNED_AFTER = /\s*(?:,\s*[A-Za-z_][\w.]*\s*)*=(?!=)/y;
/** What may stand between two names of one list (`a, b`), and between `local` or `for` and the first. */
const LIST_GAP = /\s*,\s*/y;
const SPACE_GAP = /\s+/y;
/** After a name in a table constructor (matched from where it ends): `=`, so it is a key. */
const KEY_AFTER = /\s*=(?!=)/y;

/** Whether `pattern` (sticky) matches exactly the text between `from` and `to`. */
function gapIs(pattern: RegExp, source: string, from: number, to: number): boolean {
  pattern.lastIndex = from;
  return pattern.test(source) && pattern.lastIndex === to;
}

/**
 * The word that declares the name at `tokens[i]`, when it is one of the
 * names a `local` or `for` statement lists (`local a, b`, `for k, v`);
 * `undefined` for any other use of it. Walks back over the list's names.
 */
function declaringWord(source: string, tokens: readonly Token[], i: number): string | undefined {
  let j = i;
  while (j > 0 && gapIs(LIST_GAP, source, tokens[j - 1]!.end, tokens[j]!.start)) j -= 1;
  const before = tokens[j - 1];
  if (before === undefined || (before.text !== 'local' && before.text !== 'for')) return undefined;
  return gapIs(SPACE_GAP, source, before.end, tokens[j]!.start) ? before.text : undefined;
}

/** One top-level statement the library may define once: a function, or a line of constants. */
interface Hoistable {
  readonly names: readonly string[];
  readonly start: number;
  readonly end: number;
  /** The words it uses (for a function, those of its whole definition). */
  readonly uses: readonly string[];
}

/**
 * `source` (an expanded script, as EVAL would run it, whose SHA-1 is `sha`)
 * as a Redis Function library. Its name is made now, from the text's SHA-1
 * and the rewrite; the library itself the first time it is read (a worker
 * loads a few of the package's scripts, and a process that never runs one
 * pays nothing for it).
 */
export function functionLibraryOf(source: string, sha: string): ScriptFunction {
  const name = `trc_${createHash('sha1').update(`${LIBRARY_FORM}\n${sha}`).digest('hex')}`;
  let library: string | undefined;
  return {
    name,
    get library(): string {
      library ??= libraryText(source, name);
      return library;
    },
  };
}

/**
 * The library of `source` named `name`. A top-level function is defined
 * once at the library's top level when it uses neither KEYS nor ARGV, nor
 * any top-level local left in the body; a line of constants likewise. A
 * name declared twice at the top level, or assigned anywhere, stays in the
 * body, and so does everything that uses it. What stays is the function's
 * body with its line breaks, in order; a script whose blocks do not balance
 * is the body whole (it fails as it would by EVAL).
 */
function libraryText(source: string, name: string): string {
  const tokens = tokensOf(source);
  const top = topLevelOf(tokens) ?? { definitions: [], locals: [] };
  const candidates: Hoistable[] = [];
  const declared = new Map<string, number>();
  const declare = (local: string) => declared.set(local, (declared.get(local) ?? 0) + 1);
  for (const definition of top.definitions) {
    declare(definition.name);
    candidates.push({
      names: [definition.name],
      start: tokens[definition.first]!.start,
      end: tokens[definition.last]!.end,
      uses: usesOf(source, tokens, definition.first, definition.last),
    });
  }
  for (const at of top.locals) {
    const start = tokens[at]!.start;
    const line = source.slice(start);
    const names = (DECLARED.exec(line)?.[1] ?? '')
      .split(',')
      .map((local) => local.trim())
      .filter((local) => local !== '');
    names.forEach(declare);
    const constant = CONSTANT_LINE.exec(line);
    if (constant !== null && (start === 0 || source[start - 1] === '\n')) {
      candidates.push({ names, start, end: start + constant[0].length, uses: [] });
    }
  }
  const assigned = assignedNames(source, tokens);
  let kept = candidates.filter((c) => c.names.every((name) => declared.get(name) === 1 && !assigned.has(name)));
  for (let changed = true; changed;) {
    const hoisted = new Set(kept.flatMap((c) => c.names));
    const next = kept.filter((c) =>
      c.uses.every((word) => word !== 'KEYS' && word !== 'ARGV' && (!declared.has(word) || hoisted.has(word))),
    );
    changed = next.length !== kept.length;
    kept = next;
  }
  kept.sort((a, b) => a.start - b.start);
  let body = '';
  let from = 0;
  for (const statement of kept) {
    body += source.slice(from, statement.start) + blankedSpan(source, statement.start, statement.end);
    from = statement.end;
  }
  body += source.slice(from);
  return [
    `#!lua name=${name}`,
    ...kept.map((statement) => source.slice(statement.start, statement.end)),
    `redis.register_function('${name}', function(KEYS, ARGV)`,
    body,
    'end)',
    '',
  ].join('\n');
}

/** The names some statement assigns to (`name = …`, not `local name = …`): those stay where they are. */
function assignedNames(source: string, tokens: readonly Token[]): Set<string> {
  const assigned = new Set<string>();
  tokens.forEach((token, i) => {
    ASSIGNED_AFTER.lastIndex = token.end;
    if (!ASSIGNED_AFTER.test(source) || tokens[i - 1]?.text === 'function' || isField(source, token)) return;
    // A name of `local a, b = …` (or of `for k = …`) declares, not assigns.
    if (declaringWord(source, tokens, i) === undefined) assigned.add(token.text);
  });
  return assigned;
}

/**
 * The words a function's definition (tokens `first` to `last`) uses that may
 * name something outside it. Left out: its parameters, and a name it
 * declares itself (`local n`, `for k, v`) before any use of the name in it,
 * which means its own from the line after a declaration that ends on its
 * line (in `local n = n + 1` the second `n` is the outer one). A name used
 * before its own declaration, or declared by a statement that runs on, is
 * kept: erring on keeping the function in the body.
 */
function usesOf(source: string, tokens: readonly Token[], first: number, last: number): string[] {
  const close = source.indexOf(')', tokens[first + 2]!.end);
  const own = new Set<string>();
  const seen = new Set<string>();
  /** Declared by a statement that ends on its line: its own from the first token past `from`. */
  const pending: { word: string; from: number }[] = [];
  const uses: string[] = [];
  for (let i = first + 3; i < last; i++) {
    const token = tokens[i]!;
    for (let p = pending.length - 1; p >= 0; p--) {
      if (token.start > pending[p]!.from) own.add(pending.splice(p, 1)[0]!.word);
    }
    const word = token.text;
    if (own.has(word) || isField(source, token)) continue;
    const firstSeen = !seen.has(word);
    seen.add(word);
    if (firstSeen && token.end <= close) {
      own.add(word); // a parameter
      continue;
    }
    if (firstSeen && declaringWord(source, tokens, i) !== undefined) {
      const lineEnd = source.indexOf('\n', token.end);
      const end = lineEnd === -1 ? source.length : lineEnd;
      if (closesOnLine(source.slice(token.end, end))) pending.push({ word, from: end });
      continue;
    }
    uses.push(word);
  }
  return uses;
}

/** Whether a word names a field, not a variable: `t.name`, `t:name()`, or a key in a constructor (`{ name = … }`). */
function isField(source: string, token: Token): boolean {
  const before = source[token.start - 1];
  if ((before === '.' && source[token.start - 2] !== '.') || before === ':') return true;
  if (token.braces === 0) return false;
  KEY_AFTER.lastIndex = token.end;
  return KEY_AFTER.test(source);
}

/** Whether a line's rest opens no bracket it does not close (strings and a comment aside): the statement on it ends there. */
function closesOnLine(rest: string): boolean {
  let depth = 0;
  for (const char of rest.replace(/'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"|--.*$/g, '')) {
    if (char === '(' || char === '{' || char === '[') depth++;
    else if (char === ')' || char === '}' || char === ']') depth--;
  }
  return depth === 0;
}
