/**
 * Reads a receipt's Redis key back into the call it identifies.
 *
 * The key layout (see `src/redis/keys.ts`) is
 * `<prefix>:rcpt:{<tenant>|<run>}:<tool>:<argsHash>`, every component
 * percent-encoded. The prefix holds no braces and no component holds a brace,
 * colon or bar, so the first `{` ends the prefix part and the rest splits
 * unambiguously.
 */
import type { ToolCallReceiptKey } from '../core/identity.js';
import { receiptRedisKey } from '../redis/keys.js';
import { receiptRedisKeyParts } from '../redis/key-parts.js';
import { InvalidReceiptKeyError } from './errors.js';

/** A receipt key taken apart: the prefix it lives under and the call it names. */
export interface ParsedReceiptKey {
  readonly prefix: string;
  readonly key: ToolCallReceiptKey;
}

/**
 * Parses `redisKey` as a receipt key. Accepts exactly the text that
 * `receiptRedisKey` produces for some prefix and call: a key whose components
 * are not in canonical encoding (lower-case hex, an escaped letter) is
 * refused, so the key the store rebuilds from the result is always the very
 * key given. When `expectedPrefix` is given, a key under another prefix is
 * refused too, with a hint to pass `--prefix`. Throws
 * {@link InvalidReceiptKeyError}.
 */
export function parseReceiptRedisKey(redisKey: string, expectedPrefix?: string): ParsedReceiptKey {
  let parts: ParsedReceiptKey | undefined;
  try {
    parts = receiptRedisKeyParts(redisKey);
  } catch (err) {
    if (err instanceof RangeError) {
      throw new InvalidReceiptKeyError(redisKey, 'a component is not percent-encoded the way the store writes it');
    }
    throw err;
  }
  if (parts === undefined) {
    throw new InvalidReceiptKeyError(redisKey, 'expected <prefix>:rcpt:{<tenant>|<run>}:<tool>:<argsHash>');
  }
  const { prefix, key } = parts;
  if (receiptRedisKey(prefix, key) !== redisKey) {
    throw new InvalidReceiptKeyError(redisKey, 'a component is not percent-encoded the way the store writes it');
  }
  if (expectedPrefix !== undefined && prefix !== expectedPrefix) {
    throw new InvalidReceiptKeyError(
      redisKey,
      `it is under prefix ${JSON.stringify(prefix)}, not ${JSON.stringify(expectedPrefix)} (pass --prefix ${prefix})`,
    );
  }
  return { prefix, key };
}
