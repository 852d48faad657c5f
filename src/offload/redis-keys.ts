/**
 * Redis layout of the offload store: one hash per session.
 *
 * ```text
 * <prefix>:out:{<encoded session segment>}   hash, TTL = retention, refreshed by each put
 *   c:<ref>   the text, UTF-8
 *   n:<ref>   its length in UTF-16 code units
 *   x:<ref>   checkpoint index (texts longer than one stride only)
 *   o:<ref>   owner record, {"sessionId":…[,"taskId":…]}; absent = unowned
 * <prefix>:out:{~unminted}                    the same, for refs with no session segment
 * ```
 *
 * Placement follows the ref, because a read knows nothing but the ref: a ref
 * shaped like a minted one (`tr_<session segment>~…`) lives in the hash of
 * that segment, percent-encoded as the hash tag; any other ref lives in the
 * shared `{~unminted}` hash. `~` never occurs in a session segment, so no
 * session can share that hash by name. The owner decides nothing about
 * placement; deletion finds entries by their owner records instead.
 */
import { encodeKeyComponent } from '../redis/keys.js';
import { mintedRefSessionSegment } from './ref.js';

/** Hash tag content of the hash that holds refs with no session segment. */
export const UNMINTED_HASH_TAG = '~unminted';

/** Field of the stored text of `ref`. */
export const contentField = (ref: string): string => `c:${ref}`;
/** Field of the stored length of `ref`, in UTF-16 code units. */
export const lengthField = (ref: string): string => `n:${ref}`;
/** Field of the owner record of `ref`. */
export const ownerField = (ref: string): string => `o:${ref}`;

/** The Redis hash that holds (or would hold) the entry of `ref`. */
export function offloadHashKey(prefix: string, ref: string): string {
  const segment = mintedRefSessionSegment(ref);
  const tag = segment === undefined ? UNMINTED_HASH_TAG : encodeKeyComponent(segment);
  return `${prefix}:out:{${tag}}`;
}

/** SCAN pattern for every offload hash under `prefix` (a validated prefix holds no glob characters). */
export function offloadScanPattern(prefix: string): string {
  return `${prefix}:out:{*}`;
}

const TAG_BODY = /^\{[A-Za-z0-9._~%-]+\}$/;

/** Whether `key` is exactly an offload hash under `prefix` (not one of a longer prefix). */
export function isOffloadHashKey(prefix: string, key: string): boolean {
  const head = `${prefix}:out:`;
  return key.startsWith(head) && TAG_BODY.test(key.slice(head.length));
}
