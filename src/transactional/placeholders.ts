/**
 * Splits a statement with `$1`-style placeholders into its text and its
 * parameters in order, for drivers that build statements from pieces
 * (Drizzle's `sql`). The statements are this package's own, so `$n` never
 * appears inside a string literal in them.
 */

/** A parameter's place in a statement. */
export interface Placeholder {
  readonly value: unknown;
}

/** `text` as pieces: strings of SQL, and the parameter each `$n` names. Throws for a `$n` with no parameter. */
export function paramsByPlaceholder(text: string, params: readonly unknown[]): (string | Placeholder)[] {
  const pieces: (string | Placeholder)[] = [];
  let last = 0;
  for (const match of text.matchAll(/\$([1-9][0-9]*)/g)) {
    const index = Number(match[1]) - 1;
    if (index >= params.length) throw new RangeError(`the statement names $${index + 1} but has ${params.length} parameter(s)`);
    pieces.push(text.slice(last, match.index), { value: params[index] });
    last = match.index + match[0].length;
  }
  pieces.push(text.slice(last));
  return pieces.filter((piece) => piece !== '');
}
