/**
 * The preview the model gets of an offloaded result, naming the ref the page-
 * back tool reads.
 */
import { headChars, tailChars } from './text.js';

/** Name of the page-back tool that reads offloaded results by ref. */
export const OFFLOAD_TOOL_NAME = 'ReadToolResult';

/** How every offload preview begins, so a preview can be recognized later. */
export const PERSISTED_OUTPUT_PREFIX = '<persisted-output ref=';

/** Closing line of an offload preview. */
export const PERSISTED_OUTPUT_SUFFIX = '</persisted-output>';

/** How a replaced member of a structured result begins. */
export const OFFLOADED_DETAIL_NOTICE_PREFIX = '\u2026[offloaded: ';

/** Characters of the start and the end of a result that a preview shows. */
export interface PreviewSizes {
  head: number;
  tail: number;
}

/** Head and tail sizes used when the caller gives none. */
export const DEFAULT_PREVIEW_SIZES: Readonly<PreviewSizes> = Object.freeze({ head: 1500, tail: 500 });

/** Escape a ref for use inside a double-quoted attribute of the marker. */
export function escapeRefAttribute(ref: string): string {
  return ref.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Undo {@link escapeRefAttribute}, for a ref copied out of a marker. */
export function unescapeRefAttribute(text: string): string {
  return text
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/**
 * The sentence telling the model how to get offloaded text back.
 *
 * `form` picks the wording: `'preview'` follows a head-and-tail preview,
 * `'cleared'` stands in for text removed entirely. When `reachableTools` is
 * given and lacks {@link OFFLOAD_TOOL_NAME}, the sentence says the text cannot
 * be paged back in this run instead of suggesting a call that would fail.
 * Without `reachableTools` the wording is fixed, so a preview built twice for
 * the same result is the same string.
 */
export function offloadPagebackHint(ref: string, form: 'preview' | 'cleared', reachableTools?: ReadonlySet<string>): string {
  const quoted = JSON.stringify(ref);
  if (reachableTools !== undefined && !reachableTools.has(OFFLOAD_TOOL_NAME)) {
    return `The ${OFFLOAD_TOOL_NAME} tool is not available in this run, so the text under ref ${quoted} cannot be read back here.`;
  }
  if (form === 'preview') {
    return `To read any part of it, call ${OFFLOAD_TOOL_NAME} with ref ${quoted} and an offset and limit in characters.`;
  }
  return `To read it, call ${OFFLOAD_TOOL_NAME} with ref ${quoted}.`;
}

/**
 * The stand-in the model sees for an offloaded result: an opening marker
 * naming the ref and total length, the first `sizes.head` and last
 * `sizes.tail` characters, and between them a line stating how much is not
 * shown and where it is kept (this run's tool-result store, readable by ref
 * through the page-back tool). It does not promise that a person can fetch the
 * whole text; whether a deployment offers that is its own business.
 *
 * Deterministic for equal arguments, so a re-derived preview is byte-identical.
 * A head or tail edge never splits a surrogate pair.
 */
export function buildPreview(
  full: string,
  ref: string,
  sizes: PreviewSizes = DEFAULT_PREVIEW_SIZES,
  reachableTools?: ReadonlySet<string>,
): string {
  const total = full.length;
  const head = headChars(full, Math.max(0, Math.floor(sizes.head)));
  const tail = tailChars(full.slice(head.length), Math.max(0, Math.floor(sizes.tail)));
  const omitted = total - head.length - tail.length;
  const open = `${PERSISTED_OUTPUT_PREFIX}"${escapeRefAttribute(ref)}" chars="${total}">`;
  const lines = [open];
  if (head.length > 0) lines.push(head);
  if (omitted > 0) {
    lines.push(
      `\u2026[${omitted} of ${total} characters not shown. The full output is kept in this run's ` +
        `tool-result store under the ref above. ${offloadPagebackHint(ref, 'preview', reachableTools)}]`,
    );
  }
  if (tail.length > 0) lines.push(tail);
  lines.push(PERSISTED_OUTPUT_SUFFIX);
  return lines.join('\n');
}

/** Whether `text` is an offload preview built by {@link buildPreview}. */
export function isOffloadPreview(text: unknown): boolean {
  return typeof text === 'string' && text.startsWith(PERSISTED_OUTPUT_PREFIX);
}

/**
 * The notice that replaces one oversized member of a structured result whose
 * full text went to the store. Starts with {@link OFFLOADED_DETAIL_NOTICE_PREFIX}.
 */
export function offloadedDetailNotice(ref: string, totalChars: number, reachableTools?: ReadonlySet<string>): string {
  return `${OFFLOADED_DETAIL_NOTICE_PREFIX}${totalChars} characters kept in this run's tool-result store. ${offloadPagebackHint(ref, 'cleared', reachableTools)}]`;
}

/**
 * Whether `s` is, or ends in, an offloaded-member notice: it starts with
 * {@link OFFLOADED_DETAIL_NOTICE_PREFIX} or has that prefix at the start of a
 * line. A consumer that reads such a string as data must treat it as a
 * stand-in, not as the member's real value.
 */
export function isOffloadedDetailReplacement(s: unknown): boolean {
  return typeof s === 'string' && (s.startsWith(OFFLOADED_DETAIL_NOTICE_PREFIX) || s.includes(`\n${OFFLOADED_DETAIL_NOTICE_PREFIX}`));
}
