/**
 * The defaults of result shaping: how much of a result the model gets, and
 * when a store takes it instead. The text of a result is made in
 * src/core/result-text.ts (the wrapper's fast path uses it without entering offload).
 */
export { stringifyToolResult, unwrapToolResultForLlm } from '../core/result-text.js';

/**
 * Default ceiling, in characters, on one tool result as the model receives it.
 * Only the model's copy is limited; the caller keeps the full value.
 */
export const DEFAULT_TOOL_RESULT_CHARS = 100_000;

/**
 * Default spill threshold: with a store configured, a result longer than this
 * goes to the store even when it is under the cap (about 5k tokens).
 */
export const DEFAULT_TOOL_RESULT_THRESHOLD_CHARS = 20_000;
