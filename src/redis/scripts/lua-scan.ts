/**
 * A scan of Lua text deep enough for the loader's two rewrites of a script
 * (`./script-pruning.ts`, `./script-functions.ts`): its words outside
 * strings and comments, and its top-level statements that declare locals.
 */

/** One word of Lua code (an identifier or a keyword) and where it starts and ends; strings and comments hold none. */
export interface Token {
  readonly text: string;
  readonly start: number;
  readonly end: number;
  /** How many table constructors (`{ … }`) it stands in. */
  readonly braces: number;
}

/**
 * One step of a scan of Lua text: a long comment (`--[[ … ]]`, `--[==[ … ]==]`),
 * a line comment, a quoted string (escapes included; one left open ends at
 * its line's end), a long string, a word (group 3), or a brace (group 4).
 * Anything else is passed over. One regular expression a step, as loading the package's
 * scripts runs it over every expanded script once a process.
 */
const LUA_SCAN =
  /--\[(=*)\[[\s\S]*?(?:\]\1\]|$)|--[^\n]*|"(?:\\[\s\S]|[^"\\\n])*(?:"|\n|$)|'(?:\\[\s\S]|[^'\\\n])*(?:'|\n|$)|\[(=*)\[[\s\S]*?(?:\]\2\]|$)|([A-Za-z_][A-Za-z0-9_]*)|([{}])/g;

/** The words of `source` outside strings and comments, in order. */
export function tokensOf(source: string): Token[] {
  const tokens: Token[] = [];
  let braces = 0;
  for (const match of source.matchAll(LUA_SCAN)) {
    const word = match[3];
    if (word !== undefined) tokens.push({ text: word, start: match.index, end: match.index + word.length, braces });
    else if (match[4] !== undefined) braces += match[4] === '{' ? 1 : -1;
  }
  return tokens;
}

/** Words that open a block closed by `end` (`repeat` is closed by `until`; `while` and `for` open theirs with `do`). */
const OPENS = new Set(['function', 'if', 'do', 'repeat']);
const CLOSES = new Set(['end', 'until']);

/** A top-level `local function <name>` and the span of its definition, as token indexes. */
export interface Definition {
  readonly name: string;
  readonly first: number;
  readonly last: number;
}

/** What {@link topLevelOf} finds. */
export interface TopLevel {
  /** The top-level `local function` definitions, in order. */
  readonly definitions: Definition[];
  /** The token indexes of the other top-level `local` statements (`local a, b = …`). */
  readonly locals: number[];
}

/** The script's top-level local declarations, or `undefined` when its blocks do not balance. */
export function topLevelOf(tokens: readonly Token[]): TopLevel | undefined {
  const definitions: Definition[] = [];
  const locals: number[] = [];
  let depth = 0;
  let open: { name: string; first: number } | undefined;
  for (let i = 0; i < tokens.length; i++) {
    const text = tokens[i]!.text;
    if (depth === 0 && text === 'local') {
      if (tokens[i + 1]?.text !== 'function') locals.push(i);
      else if (tokens[i + 2] !== undefined) open = { name: tokens[i + 2]!.text, first: i };
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
  return depth === 0 && open === undefined ? { definitions, locals } : undefined;
}

/** `source` with the text from `start` to `end` blanked, its line breaks kept (so line numbers stay). */
export function blankedSpan(source: string, start: number, end: number): string {
  let lines = 0;
  for (let at = source.indexOf('\n', start); at !== -1 && at < end; at = source.indexOf('\n', at + 1)) lines++;
  return '\n'.repeat(lines);
}
