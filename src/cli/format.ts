/**
 * Text output of the `tool-receipts` CLI: aligned tables and field lists for
 * a terminal, times on the Redis server's clock, and escaping so no value read
 * from Redis (a tenant, a tool name, a result) can move the cursor, recolour
 * the terminal or pose as another line.
 */
import type { ReceiptRecord } from '../redis/receipts/reads/record.js';
import { recordedToolResultContent } from '../core/journal.js';
import { escapeChar, token } from '../operator/labels.js';

export { token, isoTime, duration, relative, when, ambiguousSinceMs, stateLabel, leaseLabel } from '../operator/labels.js';

/** Where a command writes. `process.stdout` fits, and so does a test's capture. */
export interface Output {
  write(text: string): unknown;
}

/** Writes `text` followed by a newline. */
export function writeLine(out: Output, text = ''): void {
  out.write(`${text}\n`);
}

/** Writes `value` as indented JSON on its own lines. */
export function writeJson(out: Output, value: unknown): void {
  out.write(`${JSON.stringify(value, null, 2)}\n`);
}

const INVISIBLE_BUT_NEWLINE = /(?!\n)[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Zl}\p{Zp}]/gu;

/**
 * Free text (several lines allowed) made safe for a terminal: newlines stay,
 * every other control or format character is written as an escape.
 */
export function terminalText(text: string): string {
  return text.replace(INVISIBLE_BUT_NEWLINE, escapeChar);
}

/** Cuts `text` to `max` code units, marking the cut with `…`, without splitting a surrogate pair. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = Math.max(0, max - 1);
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}…`;
}

/**
 * Rows aligned under a header, two spaces between columns, the last column
 * left unpadded so long values (Redis keys, previews) do not widen the rest.
 * Cells are written as given: escape them with {@link token} first.
 */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

/**
 * Label/value pairs with the values aligned. A value spanning several lines
 * continues under the first line's value column.
 */
export function fields(pairs: readonly (readonly [string, string])[]): string[] {
  const width = Math.max(0, ...pairs.map(([label]) => label.length));
  const lines: string[] = [];
  for (const [label, value] of pairs) {
    const [first = '', ...rest] = value.split('\n');
    lines.push(`${label.padEnd(width)}  ${first}`.trimEnd());
    for (const more of rest) lines.push(`${' '.repeat(width + 2)}${more}`.trimEnd());
  }
  return lines;
}

/** A value as compact JSON, or a placeholder when it has none. */
export function compactJson(value: unknown): string {
  if (value === undefined) return '(no value)';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** What a receipt ended with, cut to `max` characters: the result, `error: …`, or empty. */
export function outcomePreview(record: ReceiptRecord, max = 48): string {
  if (record.status === 'completed') {
    const shown = recordedToolResultContent(record.result) ?? compactJson(record.result);
    return clip(terminalText(shown).replace(/\n/g, '\\n'), max);
  }
  if (record.status === 'failed' && record.error !== null) {
    return clip(`error: ${token(record.error)}`, max);
  }
  return '';
}

/** The line a command prints when nothing at all exists under the prefix it was given. */
export function emptyPrefixLine(prefix: string): string {
  return `No receipts at all under prefix '${prefix}': check --prefix (the prefix your workers use; default trc).`;
}

/** The line a command prints when the prefix holds receipts, but none of the tenant it was given. */
export function emptyTenantLine(prefix: string, tenantId: string): string {
  return `No receipts at all of tenant ${token(tenantId)} under prefix '${prefix}' (other tenants have some): check the tenant id.`;
}
