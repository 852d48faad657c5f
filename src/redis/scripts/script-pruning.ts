/**
 * Drops the top-level `local function`s a script never calls from what its
 * includes bring in. Redis runs a script's whole chunk on every call, so
 * each function it defines is a closure made anew each time (about a
 * thousand server instructions with its upvalues and the collector's
 * share), used or not: docs/performance.md#where-the-claims-time-goes.
 */

/** One token of Lua code: an identifier or keyword, or any other character; strings and comments are skipped. */
interface Token {
  readonly text: string;
  readonly start: number;
  readonly end: number;
}

const WORD = /[A-Za-z_][A-Za-z0-9_]*/y;
/** `[[`, `[=[`, … : the opening of a long string or comment, and its level. */
const LONG_OPEN = /\[(=*)\[/y;

/** The end (exclusive) of the long bracket opened at `at` with `level` equals signs, or the text's end. */
function longBracketEnd(source: string, at: number, level: string): number {
  const close = source.indexOf(`]${level}]`, at);
  return close === -1 ? source.length : close + level.length + 2;
}

/** The end (exclusive) of the quoted string opened at `at`, escapes included. */
function quotedEnd(source: string, at: number): number {
  const quote = source[at];
  for (let i = at + 1; i < source.length; i++) {
    if (source[i] === '\\') i++;
    else if (source[i] === quote || source[i] === '\n') return i + 1;
  }
  return source.length;
}

/** The code tokens of `source`, in order: words as words, every other non-blank character alone. */
function tokensOf(source: string): Token[] {
  const tokens: Token[] = [];
  let at = 0;
  while (at < source.length) {
    const char = source[at]!;
    if (char === '-' && source[at + 1] === '-') {
      LONG_OPEN.lastIndex = at + 2;
      const long = LONG_OPEN.exec(source);
      if (long) at = longBracketEnd(source, at + 2 + long[0].length, long[1]!);
      else {
        const line = source.indexOf('\n', at);
        at = line === -1 ? source.length : line + 1;
      }
      continue;
    }
    if (char === '"' || char === "'") {
      at = quotedEnd(source, at);
      continue;
    }
    if (char === '[') {
      LONG_OPEN.lastIndex = at;
      const long = LONG_OPEN.exec(source);
      if (long) {
        at = longBracketEnd(source, at + long[0].length, long[1]!);
        continue;
      }
    }
    WORD.lastIndex = at;
    const word = WORD.exec(source);
    if (word) {
      tokens.push({ text: word[0], start: at, end: at + word[0].length });
      at += word[0].length;
      continue;
    }
    if (!/\s/.test(char)) tokens.push({ text: char, start: at, end: at + 1 });
    at++;
  }
  return tokens;
}

/** Words that open a block closed by `end` (`repeat` is closed by `until`; `while` and `for` open theirs with `do`). */
const OPENS = new Set(['function', 'if', 'do', 'repeat']);
const CLOSES = new Set(['end', 'until']);

/** A top-level `local function <name>` and the span of its definition, as token indexes. */
interface Definition {
  readonly name: string;
  readonly first: number;
  readonly last: number;
}

/** The script's top-level function definitions, or `undefined` when its blocks do not balance (then nothing is pruned). */
function topLevelDefinitions(tokens: readonly Token[]): Definition[] | undefined {
  const definitions: Definition[] = [];
  let depth = 0;
  let open: { name: string; first: number } | undefined;
  for (let i = 0; i < tokens.length; i++) {
    const text = tokens[i]!.text;
    if (depth === 0 && text === 'local' && tokens[i + 1]?.text === 'function' && tokens[i + 2] !== undefined) {
      open = { name: tokens[i + 2]!.text, first: i };
    }
    if (OPENS.has(text)) depth++;
    else if (CLOSES.has(text)) {
      depth--;
      if (depth < 0) return undefined;
      if (depth === 0 && open !== undefined) {
        definitions.push({ ...open, last: i });
        open = undefined;
      }
    }
  }
  return depth === 0 && open === undefined ? definitions : undefined;
}

/**
 * `source` without the top-level `local function`s that no code left in it
 * names: dropped one after another until every one left is named outside
 * its own body, so a helper only a dropped one called goes too. A name in a
 * string or a comment does not count; any other use of the word does (a
 * field or a local of the same name keeps the function: erring on keeping).
 * A dropped definition leaves its line breaks, so Redis's error lines still
 * point into the file as written. A source whose blocks do not balance is
 * returned as it is.
 */
export function pruneUnusedFunctions(source: string): string {
  const tokens = tokensOf(source);
  const definitions = topLevelDefinitions(tokens);
  if (definitions === undefined || definitions.length === 0) return source;
  const uses = new Map<string, number[]>(definitions.map((definition) => [definition.name, []]));
  tokens.forEach((token, index) => uses.get(token.text)?.push(index));
  const dropped = new Set<Definition>();
  const inside = (index: number, definition: Definition) => index >= definition.first && index <= definition.last;
  for (let changed = true; changed;) {
    changed = false;
    for (const definition of definitions) {
      if (dropped.has(definition)) continue;
      const named = uses
        .get(definition.name)!
        .some((index) => !inside(index, definition) && ![...dropped].some((gone) => inside(index, gone)));
      if (!named) {
        dropped.add(definition);
        changed = true;
      }
    }
  }
  if (dropped.size === 0) return source;
  let out = '';
  let from = 0;
  for (const definition of definitions.filter((d) => dropped.has(d))) {
    const start = tokens[definition.first]!.start;
    const end = tokens[definition.last]!.end;
    out += source.slice(from, start) + source.slice(start, end).replace(/[^\n]/g, '');
    from = end;
  }
  return out + source.slice(from);
}
