/**
 * Caps a tool result for the model, offloading the full text to a result store
 * instead of cutting it where one is given.
 */
import { normalizeToolResultProvenance } from './provenance.js';
import { buildPreview, DEFAULT_PREVIEW_SIZES, OFFLOAD_TOOL_NAME, type PreviewSizes } from './preview.js';
import { buildToolResultRef, toolResultContentSegment } from './ref.js';
import { DEFAULT_TOOL_RESULT_CHARS, DEFAULT_TOOL_RESULT_THRESHOLD_CHARS, stringifyToolResult, unwrapToolResultForLlm } from './shaping.js';
import { headChars } from './text.js';
import type { ToolResultProvenance, ToolResultStore } from './types.js';

/** Where and when results are offloaded instead of cut. */
export interface ToolResultSpillOptions {
  /** Receives the full text of every offloaded result. */
  store: ToolResultStore;
  /** Session the results belong to; the first segment of every minted ref. */
  sessionId: string;
  /** Owner recorded with each stored text. Default `{ sessionId }`. */
  provenance?: ToolResultProvenance;
  /**
   * Offload results longer than this even when they fit the cap. Default
   * {@link DEFAULT_TOOL_RESULT_THRESHOLD_CHARS}; `0`, a negative or a
   * non-finite number leaves only the cap as a trigger.
   */
  overChars?: number;
  /** Preview head and tail sizes, shrunk when needed to fit the cap. */
  previewSizes?: PreviewSizes;
  /** Tools the model can call now; see `offloadPagebackHint`. */
  reachableTools?: ReadonlySet<string>;
}

/** Options of {@link capToolResultForLlm}. */
export interface CapToolResultOptions {
  /**
   * Most characters the model receives for one result. Default
   * {@link DEFAULT_TOOL_RESULT_CHARS}; `0`, a negative or a non-finite number
   * means no cap.
   */
  capChars?: number;
  /** Offload settings; absent or `null` means results over the cap are cut. */
  spill?: ToolResultSpillOptions | null;
}

/** The call a result came from. */
export interface ToolResultCall {
  toolName: string;
  toolCallId: string;
}

/**
 * What the model gets for one result:
 * - `unchanged`: within the limits; `value` is the (unwrapped) result itself,
 *   so it serializes exactly as it would have without the capper, and `text`
 *   is that serialization (`stringifyToolResult(value)`), made once here;
 * - `offloaded`: the full text is in the store under `ref` and `value` is its preview;
 * - `truncated`: `value` is the start of the text plus a line saying the rest
 *   was not kept. `storeError` is set when an offload was tried and failed.
 */
export type CappedToolResult =
  | { kind: 'unchanged'; value: unknown; text: string; totalChars: number; storeError?: unknown }
  | { kind: 'offloaded'; value: string; ref: string; totalChars: number }
  | { kind: 'truncated'; value: string; totalChars: number; storeError?: unknown };

function limitOrInfinity(value: number | undefined, fallback: number): number {
  const n = value ?? fallback;
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : Number.POSITIVE_INFINITY;
}

/**
 * Cut `text` to at most `cap` characters, ending with a line that says how
 * much was dropped and that it was not kept anywhere. Never splits a pair.
 */
export function truncateToolResultText(text: string, cap: number): string {
  if (text.length <= cap) return text;
  const note = (dropped: number): string => `\n\u2026[${dropped} of ${text.length} characters cut; the rest of this result was not kept]`;
  // The widest note (every character dropped) bounds the real one.
  const reserve = note(text.length).length;
  if (reserve >= cap) return headChars(text, cap);
  const head = headChars(text, cap - reserve);
  return head + note(text.length - head.length);
}

/**
 * A preview of `text` no longer than `cap` when possible. Head and tail shrink
 * (three to one) until it fits; the marker naming the ref is never cut, so a
 * cap smaller than the bare marker yields a preview longer than the cap.
 */
export function previewWithinCap(
  text: string,
  ref: string,
  cap: number,
  sizes: PreviewSizes = DEFAULT_PREVIEW_SIZES,
  reachableTools?: ReadonlySet<string>,
): string {
  let current = { head: Math.max(0, sizes.head), tail: Math.max(0, sizes.tail) };
  for (;;) {
    const preview = buildPreview(text, ref, current, reachableTools);
    const over = preview.length - cap;
    if (over <= 0 || current.head + current.tail === 0) return preview;
    const budget = Math.max(0, current.head + current.tail - over);
    const head = Math.floor((budget * 3) / 4);
    current = { head, tail: budget - head };
  }
}

/**
 * Shape one tool result for the model.
 *
 * The result is unwrapped and turned into text. Within the cap (and, with a
 * store, within the spill threshold) it is returned unchanged. Otherwise, with
 * a store, the full text is stored under a ref minted from the session, the
 * call id and a digest of the text, and the model gets a preview that fits
 * the cap; without a store, or when the store fails, the text is cut to the
 * cap. A failing store never turns a successful tool call into a failure.
 *
 * Results of the page-back tool ({@link OFFLOAD_TOOL_NAME}) are never stored
 * again, only cut if needed.
 */
export async function capToolResultForLlm(
  result: unknown,
  call: ToolResultCall,
  options: CapToolResultOptions = {},
): Promise<CappedToolResult> {
  const value = unwrapToolResultForLlm(result);
  const text = stringifyToolResult(value);
  const cap = limitOrInfinity(options.capChars, DEFAULT_TOOL_RESULT_CHARS);
  const spill = call.toolName === OFFLOAD_TOOL_NAME ? null : (options.spill ?? null);
  const threshold = spill ? limitOrInfinity(spill.overChars, DEFAULT_TOOL_RESULT_THRESHOLD_CHARS) : Number.POSITIVE_INFINITY;
  const totalChars = text.length;
  if (totalChars <= cap && totalChars <= threshold) return { kind: 'unchanged', value, text, totalChars };

  let failure: { error: unknown } | undefined;
  if (spill) {
    try {
      const ref = buildToolResultRef(spill.sessionId, call.toolCallId, toolResultContentSegment(text));
      const owner = normalizeToolResultProvenance(spill.provenance ?? { sessionId: spill.sessionId });
      await spill.store.put(ref, text, owner);
      const preview = previewWithinCap(text, ref, cap, spill.previewSizes, spill.reachableTools);
      return { kind: 'offloaded', value: preview, ref, totalChars };
    } catch (error) {
      failure = { error };
    }
  }
  const failed = failure === undefined ? {} : { storeError: failure.error };
  if (totalChars <= cap) return { kind: 'unchanged', value, text, totalChars, ...failed };
  return { kind: 'truncated', value: truncateToolResultText(text, cap), totalChars, ...failed };
}

/**
 * {@link capToolResultForLlm} with its options fixed, for running every result
 * of one run (results, failure messages, refusal reasons) through the same
 * limits.
 */
export function toolResultCapper(options: CapToolResultOptions = {}): (result: unknown, call: ToolResultCall) => Promise<CappedToolResult> {
  return (result, call) => capToolResultForLlm(result, call, options);
}
