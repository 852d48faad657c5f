/**
 * Drops the top-level `local function`s a script never calls from what its
 * includes bring in. Redis runs a script's whole chunk on every call, so
 * each function it defines is a closure made anew each time (about a
 * thousand server instructions with its upvalues and the collector's
 * share), used or not: docs/performance.md#where-the-claims-time-goes.
 */

import { blankedSpan, tokensOf, topLevelOf } from './lua-scan.js';

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
  const definitions = topLevelOf(tokens)?.definitions;
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
    out += source.slice(from, start) + blankedSpan(source, start, end);
    from = end;
  }
  return out + source.slice(from);
}
