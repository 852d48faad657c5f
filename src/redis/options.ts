/**
 * The option rules the Redis stores share with the entry points built on
 * them (`withToolReceipts`, the sweep): the connection, the key prefix, the
 * lease, the retention, the command deadline, the owner, group commit and the receipt layout. Each store's schema sits
 * beside it.
 */
import { booleanOption, MAX_TIMER_MS, nonBlankString, rule, wholeNumber, type OptionRule } from '../core/options.js';
import { checkedConnection } from './connection/connection.js';
import { durabilityOption } from './durability/durability.js';
import { InvalidReceiptInputError } from './errors.js';
import { isValidKeyPrefix } from './keys.js';

/**
 * `redis`: an ioredis `Redis` or `Cluster`, or a node-redis client. Refused with the connection's own
 * error (`redis.invalid_connection`), which names the entry point and what it got.
 */
export const connectionOption: OptionRule = { required: true, check: (value, site) => void checkedConnection(value, site.owner) };

/** `prefix`: letters, digits and `. _ ~ : / -`, at least one. */
export const prefixOption: OptionRule = rule(
  'a key prefix of letters, digits and . _ ~ : / - (braces, globs and spaces would break the key layout)',
  isValidKeyPrefix,
);

/** `leaseMs`: a lease a heartbeat timer can keep (Node fires a longer timer at once). */
export const leaseOption: OptionRule = wholeNumber(1, 'ms', MAX_TIMER_MS);

/**
 * A lease one call of a store was given (a claim's, a heartbeat's, a
 * takeover's), held to {@link leaseOption}, the keyspace's one lease rule:
 * a lease the option would refuse is no better for being passed per call.
 * Refused as receipt input (`receipt.invalid_input`), before anything is sent.
 */
export function checkedLeaseMs(value: unknown): number {
  try {
    leaseOption.check(value, { owner: 'the store call', option: 'leaseMs' });
  } catch (refusal) {
    throw new InvalidReceiptInputError((refusal as Error).message);
  }
  return value as number;
}

/** `retentionMs`: how long settled receipts (and breaker counters) are kept. */
export const retentionOption: OptionRule = wholeNumber(1, 'ms');

/** `commandTimeoutMs`: the stores' deadline for each command (a Node timer). */
export const commandTimeoutOption: OptionRule = wholeNumber(1, 'ms', MAX_TIMER_MS);

/** `owner`: the worker's name on the receipts it claims. */
export const ownerOption: OptionRule = nonBlankString;

/** `receiptLayout`: the layout new receipts are written in, `2`, `4` or `5` (see `ReceiptLayout`). */
export const receiptLayoutOption: OptionRule = rule(
  '2, 4 or 5 (the receipt layout new receipts are written in)',
  (v) => v === 2 || v === 4 || v === 5,
);

/**
 * The rules of the options a receipts keyspace's calls are made with (but
 * the connection), as a `ReceiptStore` and `withToolReceipts` (and the sweep)
 * take them: one list, so an option of the keyspace is accepted and checked
 * alike wherever one is made.
 */
export const KEYSPACE_OPTION_RULES = {
  prefix: prefixOption,
  leaseMs: leaseOption,
  retentionMs: retentionOption,
  owner: ownerOption,
  commandTimeoutMs: commandTimeoutOption,
  durability: durabilityOption,
  groupCommit: booleanOption,
  receiptLayout: receiptLayoutOption,
} as const;
