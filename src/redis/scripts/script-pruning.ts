/**
 * Drops the top-level `local function`s a script never calls from what its
 * includes bring in. Redis runs a script's whole chunk on every call, so
 * each function it defines is a closure made anew each time (about a
 * thousand server instructions with its upvalues and the collector's
 * share), used or not: docs/performance.md#where-the-claims-time-goes.
 */

/** One word of Lua code (an identifier or a keyword) and where it starts and ends; strings and comments hold none. */
interface Token {
  readonly text: string;
  readonly start: number;
  readonly end: number;
}

/**
 * One step of a scan of Lua text: a long comment (`--[[ … ]]`, `--[==[ … ]==]`),
 * a line comment, a quoted string (escapes included; one left open ends at
 * its line's end), a long string, or a word (group 3). Anything else is
 * passed over. One regular expression a step, as loading the package's
 * scripts runs it over every expanded script once a process.
 */
const LUA_SCAN =
  /--\[(=*)\[[\s\S]*?(?:\]\1\]|$)|--[^\n]*|"(?:\\[\s\S]|[^"\\\n])*(?:"|\n|$)|'(?:\\[\s\S]|[^'\\\n])*(?:'|\n|$)|\[(=*)\[[\s\S]*?(?:\]\2\]|$)|([A-Za-z_][A-Za-z0-9_]*)/g;

/** The words of `source` outside strings and comments, in order. */
function tokensOf(source: string): Token[] {
  const tokens: Token[] = [];
  for (const match of source.matchAll(LUA_SCAN)) {
    const word = match[3];
    if (word !== undefined) tokens.push({ text: word, start: match.index, end: match.index + word.length });
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
  // For each word naming a definition, the definition its use stands in (-1: the script's own body).
  const within = new Int32Array(tokens.length).fill(-1);
  definitions.forEach((definition, d) => within.fill(d, definition.first, definition.last + 1));
  const uses = new Map<string, number[]>(definitions.map((definition) => [definition.name, []]));
  tokens.forEach((token, index) => uses.get(token.text)?.push(within[index]!));
  const dropped = new Set<number>();
  for (let changed = true; changed;) {
    changed = false;
    definitions.forEach((definition, d) => {
      if (dropped.has(d)) return;
      const named = uses.get(definition.name)!.some((where) => where !== d && !dropped.has(where));
      if (!named) {
        dropped.add(d);
        changed = true;
      }
    });
  }
  if (dropped.size === 0) return source;
  let out = '';
  let from = 0;
  for (const definition of definitions.filter((_, d) => dropped.has(d))) {
    const start = tokens[definition.first]!.start;
    const end = tokens[definition.last]!.end;
    out += source.slice(from, start) + source.slice(start, end).replace(/[^\n]/g, '');
    from = end;
  }
  return out + source.slice(from);
}
