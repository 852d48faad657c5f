/**
 * Redis key layout for receipts, run indexes and circuit breakers.
 *
 * ```text
 * <prefix>:rcpt:{<tenant>|<run>}:<tool>:<argsHash>   hash: one receipt
 * <prefix>:run:{<tenant>|<run>}                      sorted set: the run's receipts (keys, or compact members), scored by creation time (ms)
 * <prefix>:brk:{<tenant>|<run>}                      hash: the run's per-tool failure / rejection counters
 * <prefix>:cnt:{<tenant>|<run>}                      sorted set: the run's counting set (lua/includes/count.lua)
 * <prefix>:runs:{runs-<n>}                           sorted set: runs registered in shard n, scored by registration time
 * <prefix>:audit                                     stream: the operators' audit log (src/redis/operators/audit-log.ts)
 * ```
 *
 * The part in braces is a Redis Cluster hash tag, so every key of one run
 * lands in the same slot and a Lua script may touch several of them at once.
 * Each component is percent-encoded (see {@link encodeKeyComponent}), so no
 * tenant, run, tool name or digest can contain a brace, a colon, a bar, a
 * percent sign, whitespace or a control character: no value can close the
 * hash tag early or pass for a separator.
 */
import type { ToolCallReceiptKey } from '../core/identity.js';
import { ToolReceiptsError } from '../core/errors.js';

/** The prefix used when a store is given none. */
export const DEFAULT_KEY_PREFIX = 'trc';

const UNRESERVED = /^[A-Za-z0-9._~-]$/;
const ALL_UNRESERVED = /^[A-Za-z0-9._~-]*$/;
const PREFIX_PATTERN = /^[A-Za-z0-9._~:/-]+$/;

/** Thrown for a key prefix that could break the key layout (a brace, a glob character, whitespace…). */
export class InvalidKeyPrefixError extends ToolReceiptsError {
  readonly code = 'receipt.invalid_prefix';
  readonly prefix: string;

  constructor(prefix: string) {
    super(
      `invalid key prefix ${JSON.stringify(prefix)}: use only letters, digits and . _ ~ : / - ` +
        '(braces would move the hash tag, glob characters would break SCAN patterns)',
    );
    this.prefix = prefix;
  }
}

/**
 * Percent-encodes one key component. Every character outside
 * `[A-Za-z0-9._~-]` becomes the `%XX` (upper-case hex) of its UTF-8 bytes,
 * including `%` itself, so the output never contains `{`, `}`, `:`, `|`,
 * whitespace or control characters. An unpaired surrogate is written as the
 * three bytes it would have in generalized UTF-8 (bytes that valid UTF-8
 * never produces), so the encoding is injective over every JavaScript string.
 */
export function encodeKeyComponent(value: string): string {
  // Most ids and every hex digest need no encoding; skip the per-character walk.
  if (ALL_UNRESERVED.test(value)) return value;
  let out = '';
  for (const char of value) {
    if (UNRESERVED.test(char)) {
      out += char;
      continue;
    }
    for (const byte of utf8Bytes(char.codePointAt(0) ?? 0)) {
      out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    }
  }
  return out;
}

function utf8Bytes(cp: number): number[] {
  if (cp < 0x80) return [cp];
  if (cp < 0x800) return [0xc0 | (cp >> 6), 0x80 | (cp & 0x3f)];
  if (cp < 0x10000) return [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)];
  return [0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3f), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)];
}

/**
 * Inverse of {@link encodeKeyComponent}. Throws a `RangeError` on text that
 * the encoder cannot have produced.
 */
export function decodeKeyComponent(encoded: string): string {
  let out = '';
  let i = 0;
  const byteAt = (at: number): number => {
    const hex = encoded.slice(at + 1, at + 3);
    if (encoded[at] !== '%' || !/^[0-9A-F]{2}$/.test(hex)) {
      throw new RangeError(`not an encoded key component: ${JSON.stringify(encoded)}`);
    }
    return parseInt(hex, 16);
  };
  while (i < encoded.length) {
    const ch = encoded[i] as string;
    if (ch !== '%') {
      if (!UNRESERVED.test(ch)) throw new RangeError(`not an encoded key component: ${JSON.stringify(encoded)}`);
      out += ch;
      i += 1;
      continue;
    }
    const lead = byteAt(i);
    const extra = lead < 0x80 ? 0 : lead >= 0xf0 ? 3 : lead >= 0xe0 ? 2 : lead >= 0xc0 ? 1 : -1;
    if (extra < 0) throw new RangeError(`not an encoded key component: ${JSON.stringify(encoded)}`);
    let cp = extra === 0 ? lead : lead & (0x3f >> extra);
    for (let k = 1; k <= extra; k++) cp = (cp << 6) | (byteAt(i + 3 * k) & 0x3f);
    out += String.fromCodePoint(cp);
    i += 3 * (extra + 1);
  }
  return out;
}

/** Whether `prefix` is a usable key prefix: one or more of letters, digits and `. _ ~ : / -`. */
export function isValidKeyPrefix(prefix: unknown): prefix is string {
  return typeof prefix === 'string' && PREFIX_PATTERN.test(prefix);
}

/** Checks a key prefix and returns it; throws {@link InvalidKeyPrefixError}. */
export function validateKeyPrefix(prefix: string): string {
  if (!isValidKeyPrefix(prefix)) throw new InvalidKeyPrefixError(prefix);
  return prefix;
}

/** The hash tag of a run, braces included: `{<tenant>|<run>}`. */
export function runHashTag(tenantId: string, runId: string): string {
  return `{${encodeKeyComponent(tenantId)}|${encodeKeyComponent(runId)}}`;
}

/** A run's key of `kind` under `prefix`, given the run's hash tag (braces included): the one layout of them all. */
function runKey(prefix: string, kind: 'rcpt' | 'run' | 'cnt' | 'brk', hashTag: string): string {
  return `${prefix}:${kind}:${hashTag}`;
}

/** {@link receiptRedisKey} with the run's hash tag already made. */
function receiptKeyIn(prefix: string, hashTag: string, key: ToolCallReceiptKey): string {
  return `${runKey(prefix, 'rcpt', hashTag)}:${encodeKeyComponent(key.toolName)}:${encodeKeyComponent(key.argsHash)}`;
}

/** Key of the receipt hash for one tool call. */
export function receiptRedisKey(prefix: string, key: ToolCallReceiptKey): string {
  return receiptKeyIn(prefix, runHashTag(key.tenantId, key.runId), key);
}

/** Key of the sorted set listing one run's receipts by creation time. */
export function runIndexRedisKey(prefix: string, tenantId: string, runId: string): string {
  return runKey(prefix, 'run', runHashTag(tenantId, runId));
}

/**
 * Key of the sorted set that counts one run's receipts by status, effect and
 * expiry, so fleet-wide counts never read a receipt (see `lua/includes/count.lua`).
 */
export function receiptCountRedisKey(prefix: string, tenantId: string, runId: string): string {
  return runKey(prefix, 'cnt', runHashTag(tenantId, runId));
}

/** {@link receiptCountRedisKey} from the text inside a run's hash tag (`<tenant>|<run>`, encoded), as the run registry holds it. */
export function receiptCountRedisKeyOfTag(prefix: string, tag: string): string {
  return runKey(prefix, 'cnt', `{${tag}}`);
}

/** Key of the hash holding one run's per-tool circuit-breaker counters. */
export function breakerRedisKey(prefix: string, tenantId: string, runId: string): string {
  return runKey(prefix, 'brk', runHashTag(tenantId, runId));
}

/** The keys a call's transitions touch, in the order the claim script takes them. */
export type CallKeys = [receipt: string, runIndex: string, breaker: string, count: string];

/**
 * {@link receiptRedisKey}, {@link runIndexRedisKey}, {@link breakerRedisKey}
 * and {@link receiptCountRedisKey} of one call, the run's hash tag encoded
 * once for all four (every claim builds them).
 */
export function callRedisKeys(prefix: string, key: ToolCallReceiptKey): CallKeys {
  const tag = runHashTag(key.tenantId, key.runId);
  return [receiptKeyIn(prefix, tag, key), runKey(prefix, 'run', tag), runKey(prefix, 'brk', tag), runKey(prefix, 'cnt', tag)];
}

/**
 * The compact layout (5) a keyspace with `receiptLayout: 5` creates receipts
 * in: layout 4, named in its run's index and counting set by a short member
 * (the call's part of its key, a hex digest written as base64url) instead of
 * its whole key, and with a result longer than 64 bytes (up to 2 KiB) kept
 * in parts of at most 64 bytes (`result`, `result.2` … and `result_parts`),
 * so that its hash and its run's sorted sets stay listpacks at the server's
 * default limits. Readers of this release join the parts.
 */
export const COMPACT_RECEIPT_SCHEMA = 5;

const LOWER_HEX_DIGEST = /^[0-9a-f]{64}$/;

/**
 * The member naming a receipt in its run's counting set, and in the compact
 * layout (5) in its run index too, from the receipt key's part after the hash
 * tag (`<encoded tool>:<encoded args hash>`): that part as it is, or with
 * `compact` true and an args hash of 64 lowercase hex digits (the default
 * digests' form) `<encoded tool>=<the hash's 32 bytes as base64url>`, 43
 * characters instead of 64, so with a tool name of up to 20 encoded
 * characters the member fits the server's default zset-max-listpack-value
 * (64 bytes) and the run's sets stay listpacks. `lua/includes/count-score.lua`
 * (countMember) makes the same member; {@link callPartOfMember} undoes it.
 */
export function callMember(callPart: string, compact: boolean): string {
  const colon = callPart.indexOf(':');
  if (!compact || colon < 0) return callPart;
  const digest = callPart.slice(colon + 1);
  if (!LOWER_HEX_DIGEST.test(digest)) return callPart;
  return `${callPart.slice(0, colon)}=${Buffer.from(digest, 'hex').toString('base64url')}`;
}

/**
 * The entry a run index lists the receipt under `receiptKey` by when the
 * receipt has layout `layout`: its compact member ({@link callMember}) in
 * layout 5, the key itself before.
 */
export function runIndexEntry(receiptKey: string, layout: number): string {
  return layout === COMPACT_RECEIPT_SCHEMA ? callMember(receiptKey.slice(receiptKey.indexOf('}:') + 2), true) : receiptKey;
}

/** Shards of the run registry per prefix. Fixed: every process of a fleet must agree on it. */
export const RUN_REGISTRY_SHARDS = 16;

/** FNV-1a over UTF-16 code units: cheap, and the same in every process. */
function registryShardOf(encodedTenant: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < encodedTenant.length; i++) {
    hash ^= encodedTenant.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % RUN_REGISTRY_SHARDS;
}

/** Key of run registry shard `n` under `prefix`. */
export function runRegistryRedisKey(prefix: string, shard: number): string {
  return `${prefix}:runs:{runs-${shard}}`;
}

/** The run registry shard that holds `tenantId`'s runs (a hash of the encoded tenant picks it). */
export function runRegistryShardKey(prefix: string, tenantId: string): string {
  return runRegistryRedisKey(prefix, registryShardOf(encodeKeyComponent(tenantId)));
}

/** A run's member in the run registry: the text inside its hash tag, `<tenant>|<run>` percent-encoded. */
export function runRegistrationTag(tenantId: string, runId: string): string {
  return `${encodeKeyComponent(tenantId)}|${encodeKeyComponent(runId)}`;
}

/** The per-tool fields of a run's breaker hash. */
export type BreakerFieldKind = 'failures' | 'rejections' | 'removed';

/**
 * Field of a run's breaker hash holding one tool's `kind` counter or reason:
 * `<encoded tool>:<kind>` (`failures`, `rejections` = the consecutive streak,
 * `removed` = the removal reason). The tool name is percent-encoded, so no
 * tool can pass for another tool's field.
 */
export function breakerField(toolName: string, kind: BreakerFieldKind): string {
  return `${encodeKeyComponent(toolName)}:${kind}`;
}

/**
 * SCAN pattern matching every run index under `prefix`, or only those of one
 * tenant (an encoded component holds no glob characters either).
 */
export function runIndexScanPattern(prefix: string, tenantId?: string): string {
  return tenantId === undefined ? `${prefix}:run:*` : `${prefix}:run:{${encodeKeyComponent(tenantId)}|*`;
}

/**
 * The tenant and run of a run index key under `prefix`, or `undefined` when
 * `redisKey` is not exactly one (a SCAN match of a longer prefix, say).
 */
export function parseRunIndexRedisKey(prefix: string, redisKey: string): { tenantId: string; runId: string } | undefined {
  const head = `${prefix}:run:{`;
  if (!redisKey.startsWith(head)) return undefined;
  const match = /^([^{}:|]*)\|([^{}:|]*)\}$/.exec(redisKey.slice(head.length));
  if (!match) return undefined;
  try {
    return { tenantId: decodeKeyComponent(match[1] ?? ''), runId: decodeKeyComponent(match[2] ?? '') };
  } catch {
    return undefined;
  }
}

/** SCAN pattern matching every receipt under `prefix` (the prefix holds no glob characters). */
export function receiptScanPattern(prefix: string): string {
  return `${prefix}:rcpt:*`;
}

/**
 * True when `redisKey` has exactly the shape of a receipt key under `prefix`.
 * Used to drop SCAN matches that belong to a longer prefix such as `trc:rcpt:x`.
 */
export function isReceiptRedisKey(prefix: string, redisKey: string): boolean {
  const head = `${prefix}:rcpt:{`;
  if (!redisKey.startsWith(head)) return false;
  return /^[^{}:|]*\|[^{}:|]*\}:[^{}:|]*:[^{}:|]*$/.test(redisKey.slice(head.length));
}
