/**
 * Where approvals live on Redis: the receipt itself (its approval fields),
 * and one index per prefix of the calls awaiting approval.
 *
 * The index `<prefix>:approvals` is a sorted set of receipt keys scored by
 * when each approval expires. It sits in its own slot (no hash tag), so it
 * is written from TypeScript, not by the receipt's scripts: the worker adds
 * a receipt after the gate created it awaiting approval, a decision removes
 * it, and a listing drops the entries whose receipt no longer awaits (an
 * expiry, a receipt gone). A missed write only makes the listing lag, never
 * decides anything: the receipt is the truth.
 */
import { DEFAULT_KEY_PREFIX, validateKeyPrefix } from '../redis/keys.js';
import { InvalidReceiptInputError } from '../redis/errors.js';

/** Key of the index of calls awaiting approval under `prefix`. */
export function pendingApprovalsRedisKey(prefix: string = DEFAULT_KEY_PREFIX): string {
  return `${validateKeyPrefix(prefix)}:approvals`;
}

/**
 * The run index and counting set of the run a receipt key belongs to (same
 * hash tag): the other KEYS of the approval scripts. Refuses a key that is
 * not a receipt key under `prefix`.
 */
export function approvalScriptKeys(prefix: string, receiptKey: string): [string, string, string] {
  const head = `${validateKeyPrefix(prefix)}:rcpt:`;
  const tag = /^\{[^{}:|]*\|[^{}:|]*\}/.exec(receiptKey.startsWith(head) ? receiptKey.slice(head.length) : '')?.[0];
  if (tag === undefined)
    throw new InvalidReceiptInputError(`${JSON.stringify(receiptKey.slice(0, 200))} is not a receipt key under prefix ${prefix}`);
  return [receiptKey, `${prefix}:run:${tag}`, `${prefix}:cnt:${tag}`];
}
