/**
 * Epochs of a receipt's lifetime as an operator gives them back: where an
 * epoch comes from, judged by the check a claim minted it with (`claim.ts`).
 */
import { EPOCH_RANDOM_CHARS, epochCheck } from './claim.js';

export { newEpoch } from './claim.js';

/** Characters of the check that ties an epoch to its receipt (3 bytes as base64url). */
const CHECK_CHARS = 4;
const EPOCH_TEXT = /^[A-Za-z0-9_-]+$/;

/**
 * Where an epoch someone gives for the receipt under `redisKey` (an
 * operator's `--epoch`) comes from, judged by its check alone:
 * - `'this-receipt'`: minted for this receipt key, by the claim that created
 *   this lifetime or an earlier one (a mistyped epoch passes with odds of
 *   one in 16.7 million);
 * - `'not-this-receipt'`: never minted for this key (mistyped, or another
 *   receipt's);
 * - `'unknown'`: not of the checked form (an epoch minted before epochs
 *   carried a check), so nothing can be said.
 */
export function epochOrigin(epoch: string, redisKey: string): 'this-receipt' | 'not-this-receipt' | 'unknown' {
  if (!EPOCH_TEXT.test(epoch)) return 'not-this-receipt';
  if (epoch.length !== EPOCH_RANDOM_CHARS + CHECK_CHARS) return epoch.length === EPOCH_RANDOM_CHARS ? 'unknown' : 'not-this-receipt';
  const random = epoch.slice(0, EPOCH_RANDOM_CHARS);
  return epochCheck(redisKey, random) === epoch.slice(EPOCH_RANDOM_CHARS) ? 'this-receipt' : 'not-this-receipt';
}
