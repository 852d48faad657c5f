/**
 * The header every script in `lua/` opens with, checked against the file's
 * name when the directory is loaded: a `--[[ ... ]]` block whose first line
 * names the script (`claim: ...`), then a line per key (`KEYS[1]  receipt
 * hash`), its ARGV (`ARGV[1] ...`, or `ARGV  none`) and what it returns
 * (`Returns ...`).
 *
 * A script of a fixed key count (`<name>-<n>.lua`) declares exactly
 * `KEYS[1]` to `KEYS[n]`, in order, one a line or as a range
 * `KEYS[1] .. KEYS[3]`. A variadic script (`<name>-N.lua`) lays its keys out
 * as: fixed keys from the start (`KEYS[1]`, `KEYS[2]`), one range open at its
 * end (`KEYS[3] .. KEYS[#KEYS - 1]`, or `KEYS[2..n]` to the last key), then
 * fixed keys from the end (`KEYS[#KEYS]`); the fixed keys are the least it
 * takes.
 */
import { ScriptDefinitionError } from './script-errors.js';

/** How many KEYS a script takes, as its header declares them. */
export type ScriptKeys =
  /** Exactly `count`. */
  | { readonly kind: 'fixed'; readonly count: number }
  /** Any number from `atLeast` (the keys before and after its one open range). */
  | { readonly kind: 'variadic'; readonly atLeast: number };

/** A key's position: from the start (`KEYS[2]`) or from the end (`KEYS[#KEYS - 1]`: 1 back; `KEYS[#KEYS]`, `n`: 0 back). */
type Position = { readonly start: number } | { readonly back: number };
type Declared = { readonly from: Position; readonly to: Position | undefined; readonly text: string };

const POSITION = String.raw`(\d+|#KEYS(?:\s*-\s*\d+)?|n)`;
/** `KEYS[a]`, `KEYS[a] .. KEYS[b]` or `KEYS[a..b]` at the start of a line. */
const KEYS_LINE = new RegExp(String.raw`^KEYS\[${POSITION}(?:\.\.${POSITION})?\](?:\s*\.\.\s*KEYS\[${POSITION}\])?`);

function position(text: string): Position {
  if (/^\d+$/.test(text)) return { start: Number(text) };
  return { back: Number(/-\s*(\d+)$/.exec(text)?.[1] ?? 0) };
}

const describe = (p: Position): string => ('start' in p ? `KEYS[${p.start}]` : p.back === 0 ? 'KEYS[#KEYS]' : `KEYS[#KEYS - ${p.back}]`);

/** The header's KEYS lines, in order. */
function declaredKeys(lines: readonly string[], refuse: (why: string) => never): Declared[] {
  const declared: Declared[] = [];
  for (const raw of lines) {
    const line = raw.trim();
    if (!/^KEYS\b/.test(line)) continue;
    const match = KEYS_LINE.exec(line);
    if (!match)
      refuse(`has a KEYS line ${JSON.stringify(line.slice(0, 60))} that starts with neither KEYS[<i>] nor KEYS[<i>] .. KEYS[<j>]`);
    const [text, first, inner, outer] = match;
    const end = inner ?? outer;
    declared.push({ from: position(first!), to: end === undefined ? undefined : position(end), text });
  }
  return declared;
}

/** Reads the key layout the KEYS lines declare; see the module's description for the one accepted. */
function keyLayout(declared: readonly Declared[], refuse: (why: string) => never): ScriptKeys & { readonly head: number } {
  let next = 1;
  let tail: number | undefined; // keys still to declare after the open range
  let atLeast = 0;
  const expected = (): string => (tail === undefined ? `KEYS[${next}]` : describe({ back: tail - 1 }));
  for (const d of declared) {
    const out: () => never = () => refuse(`declares ${d.text} where ${expected()} comes next`);
    if (tail !== undefined) {
      if (d.to !== undefined || 'start' in d.from || d.from.back !== tail - 1) out();
      tail--;
      atLeast++;
      continue;
    }
    if (!('start' in d.from) || d.from.start !== next) out();
    if (d.to === undefined) {
      next++;
    } else if ('start' in d.to) {
      if (d.to.start < next) out();
      next = d.to.start + 1;
    } else {
      tail = d.to.back;
    }
  }
  if (tail !== undefined && tail > 0) refuse(`declares its open range up to ${describe({ back: tail })} but not the ${tail} KEYS after it`);
  const head = next - 1;
  return tail === undefined ? { kind: 'fixed', count: head, head } : { kind: 'variadic', atLeast: head + atLeast, head };
}

/** `text` without Lua comments (`--[[ ... ]]` blocks and `--` to the end of the line). */
const withoutComments = (text: string): string => text.replace(/--\[\[[\s\S]*?\]\]/g, '').replace(/--.*$/gm, '');

/** Every `ARGV[i]` a header line starting with ARGV names, ranges `ARGV[a] .. ARGV[b]` and `ARGV[a..b]` included. */
function declaredArgv(lines: readonly string[]): Set<number> {
  const named = new Set<number>();
  for (const line of lines.filter((l) => /^\s*ARGV\b/.test(l))) {
    for (const m of line.matchAll(/ARGV\[(\d+)\](?:\s*\.\.\s*ARGV\[(\d+)\])?|ARGV\[(\d+)\.\.(\d+)\]/g)) {
      const from = Number(m[1] ?? m[3]);
      const to = Number(m[2] ?? m[4] ?? from);
      for (let i = from; i <= to; i++) named.add(i);
    }
  }
  return named;
}

/**
 * Checks the header of `file` (`<name>-<n>.lua` or `<name>-N.lua`) against
 * its name and returns the keys it takes. `source` is its text with includes
 * expanded: the code after the header may use no `KEYS[i]` beyond the keys
 * declared (an include reading keys counts) and no `ARGV[i]` the header does
 * not name. Throws {@link ScriptDefinitionError} naming the file and what
 * disagrees.
 */
export function checkScriptHeader(file: string, source: string): ScriptKeys {
  const refuse: (why: string) => never = (why) => {
    throw new ScriptDefinitionError(`lua/${file} ${why}`, file);
  };
  const named = /^([A-Za-z0-9_-]+)-(\d+|N)\.lua$/.exec(file);
  if (!named) return refuse('is not named <name>-<numberOfKeys>.lua or <name>-N.lua');
  const [, name, suffix] = named;
  const header = /^--\[\[([\s\S]*?)\]\]/.exec(source);
  if (!header) return refuse('does not open with a --[[ ... ]] header declaring its KEYS, ARGV and what it returns');
  const lines = header[1]!.split('\n');
  const first = lines.find((l) => l.trim() !== '')?.trim() ?? '';
  if (!first.startsWith(`${name}:`))
    refuse(`opens its header with ${JSON.stringify(first.slice(0, 40))}; the first line names the script: "${name}: <what it does>"`);

  const layout = keyLayout(declaredKeys(lines, refuse), refuse);
  if (suffix === 'N' && layout.kind === 'fixed') {
    refuse(
      `declares ${layout.count} KEYS in its header, but its file name says N (any number): declare the variable part as a range such as KEYS[${layout.count + 1}..n]`,
    );
  }
  if (suffix !== 'N' && layout.kind === 'variadic')
    refuse(`declares any number of KEYS (at least ${layout.atLeast}) in its header, but its file name says ${suffix}`);
  if (layout.kind === 'fixed' && layout.count !== Number(suffix)) {
    refuse(
      `declares ${layout.count} KEYS in its header${layout.count > 0 ? ` (KEYS[1] .. KEYS[${layout.count}])` : ''}, but its file name says ${suffix}`,
    );
  }
  if (!lines.some((l) => /^\s*ARGV\b/.test(l))) refuse('declares no ARGV in its header: write its ARGV[i] lines, or "ARGV  none"');
  if (!lines.some((l) => /^\s*Returns\b/.test(l))) refuse('does not say in its header what it returns: write a "Returns ..." line');

  const code = withoutComments(source.slice(header[0].length));
  for (const [, i] of code.matchAll(/\bKEYS\[(\d+)\]/g)) {
    if (Number(i) > layout.head)
      refuse(
        `uses KEYS[${i}], but its header declares ${layout.kind === 'fixed' ? `${layout.count} KEYS` : `KEYS[${layout.head}] as the last fixed key from the start`}`,
      );
  }
  const argv = declaredArgv(lines);
  for (const [, i] of code.matchAll(/\bARGV\[(\d+)\]/g)) {
    if (!argv.has(Number(i))) refuse(`uses ARGV[${i}], which its header does not declare`);
  }
  return layout.kind === 'fixed' ? { kind: 'fixed', count: layout.count } : { kind: 'variadic', atLeast: layout.atLeast };
}
