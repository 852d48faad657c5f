/**
 * Which effect a tool's receipt is claimed and recorded with, from the tool's
 * declared `effect` (`opaque`, `resumable`, `keyed` or `transactional`). Pure.
 */
import type { EffectResumability, ReceiptEffect } from './decision.js';

/**
 * The effect a tool's claim decides with: a keyed or transactional effect is
 * opaque to the decision (the receipt records `transactional` as such, see
 * {@link recordedEffectOf}).
 */
export function receiptEffectOf(tool: { readonly effect: string }): EffectResumability {
  return tool.effect === 'resumable' ? 'resumable' : 'opaque';
}

/** The effect a tool's receipt records: `transactional` marks a call settled from its outcome row. */
export function recordedEffectOf(tool: { readonly effect: string }): ReceiptEffect {
  return tool.effect === 'transactional' ? 'transactional' : receiptEffectOf(tool);
}
