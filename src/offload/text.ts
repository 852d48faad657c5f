/**
 * Text made safe to store: lone surrogates replaced, so it encodes to UTF-8
 * without loss.
 */
import type { ToolResultSliceOptions } from './types.js';

const LONE_SURROGATES = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * Replace each unpaired surrogate with U+FFFD. The result has the same
 * `length` and encodes to UTF-8 without loss, which is what a byte-oriented
 * backend stores anyway; every store applies it so all backends agree.
 */
export function toWellFormedText(text: string): string {
  return text.replace(LONE_SURROGATES, '\ufffd');
}

/** Whether the code unit at `index` is the second half of a surrogate pair. */
export function splitsSurrogatePair(text: string, index: number): boolean {
  if (index <= 0 || index >= text.length) return false;
  const before = text.charCodeAt(index - 1);
  const at = text.charCodeAt(index);
  return before >= 0xd800 && before <= 0xdbff && at >= 0xdc00 && at <= 0xdfff;
}

/** The first `count` code units of `text`, one fewer if that would split a pair. */
export function headChars(text: string, count: number): string {
  let end = Math.max(0, Math.min(count, text.length));
  if (splitsSurrogatePair(text, end)) end -= 1;
  return text.slice(0, end);
}

/** The last `count` code units of `text`, one fewer if that would split a pair. */
export function tailChars(text: string, count: number): string {
  if (count <= 0) return '';
  let start = Math.max(0, text.length - count);
  if (splitsSurrogatePair(text, start)) start += 1;
  return text.slice(start);
}

/** A resolved `[start, end)` window over a text of `total` code units. */
export interface SliceWindow {
  start: number;
  end: number;
}

function wholeOrDefault(value: number | undefined, fallback: number): number {
  if (value === undefined || !Number.isFinite(value)) return fallback;
  return Math.max(0, Math.floor(value));
}

/**
 * `get` options in whole numbers: a missing or non-finite offset is 0, a
 * missing or non-finite limit is `undefined` (the rest of the text),
 * fractions round down and negatives become 0.
 */
export function normalizeSliceOptions(options: ToolResultSliceOptions | undefined): { offset: number; limit: number | undefined } {
  const limit = options?.limit;
  return {
    offset: wholeOrDefault(options?.offset, 0),
    limit: limit === undefined || !Number.isFinite(limit) ? undefined : Math.max(0, Math.floor(limit)),
  };
}

/**
 * Resolve `get` options against a text length (see
 * {@link normalizeSliceOptions}), clamping both ends to the text. Windows
 * follow `String.prototype.slice`, so a window edge may fall between the
 * halves of a surrogate pair.
 */
export function resolveSliceWindow(options: ToolResultSliceOptions | undefined, total: number): SliceWindow {
  const { offset, limit } = normalizeSliceOptions(options);
  const start = Math.min(offset, total);
  return { start, end: limit === undefined ? total : Math.min(total, start + limit) };
}
