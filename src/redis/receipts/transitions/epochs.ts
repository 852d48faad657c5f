/**
 * Epochs of a receipt's lifetime: unguessable, drawn from a pool, with a check
 * tying each to its receipt key.
 */
import { randomBytes } from 'node:crypto';

const EPOCH_BYTES = 12;
/** Epochs drawn from the generator per refill. */
const POOL_EPOCHS = 256;
/** Characters of the random part (12 bytes as base64url). */
const RANDOM_CHARS = 16;
/** Characters of the check that ties an epoch to its receipt (3 bytes as base64url). */
const CHECK_CHARS = 4;
const EPOCH_TEXT = /^[A-Za-z0-9_-]+$/;

let pool = Buffer.alloc(0);
let offset = 0;

/** FNV-1a over UTF-16 code units, folded to 24 bits: cheap, and the same in every process. */
function check(redisKey: string, random: string): string {
  let hash = 0x811c9dc5;
  const text = `${redisKey}\n${random}`;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  hash >>>= 0;
  const folded = (hash >>> 24) ^ (hash & 0xffffff);
  return Buffer.from([folded >>> 16, (folded >>> 8) & 0xff, folded & 0xff]).toString('base64url');
}

/**
 * A new lifetime epoch for the receipt under `redisKey`: 12 bytes from the
 * CSPRNG as base64url (unguessable, so no stale fence can name a lifetime it
 * did not see), then 4 characters of a check computed from those and the
 * receipt key, so {@link epochOrigin} can tell an epoch once minted for this
 * receipt from a mistyped one or another receipt's. The bytes are drawn 256
 * epochs at a time: one `randomBytes` call per claim was a measurable share
 * of a claim's CPU. Each byte is used once.
 */
export function newEpoch(redisKey: string): string {
  if (offset + EPOCH_BYTES > pool.length) {
    pool = randomBytes(EPOCH_BYTES * POOL_EPOCHS);
    offset = 0;
  }
  const random = pool.toString('base64url', offset, offset + EPOCH_BYTES);
  offset += EPOCH_BYTES;
  return random + check(redisKey, random);
}

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
  if (epoch.length !== RANDOM_CHARS + CHECK_CHARS) return epoch.length === RANDOM_CHARS ? 'unknown' : 'not-this-receipt';
  const random = epoch.slice(0, RANDOM_CHARS);
  return check(redisKey, random) === epoch.slice(RANDOM_CHARS) ? 'this-receipt' : 'not-this-receipt';
}
