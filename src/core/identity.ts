/**
 * What identifies one tool call across retries (tenant, run, tool, argument
 * digest), and the digests that make it.
 */
import { createHmac, hash } from 'node:crypto';
import { canonicalJson } from './canonical-json.js';
import { describeValue, ToolReceiptsError } from './errors.js';

/**
 * What identifies one tool call across every retry: who asked (tenant), in
 * which agent run, for which tool, with which arguments.
 *
 * Identity is by content, not by position in a turn. A retried turn is a new
 * completion that may reorder or drop calls; keying on position would replay
 * one tool's result as another's. Keying on content costs, at worst, one
 * extra execution of a call that genuinely never ran.
 */
export interface ToolCallReceiptKey {
  readonly tenantId: string;
  readonly runId: string;
  readonly toolName: string;
  /** Digest of the canonical arguments, from {@link toolCallArgsHash}. */
  readonly argsHash: string;
}

/**
 * Hashes canonical argument text into the `argsHash` of a key. Must be stable
 * across processes and releases: a digest that changes orphans every stored
 * receipt. May be synchronous or asynchronous.
 */
export type DigestFn = (canonical: string) => string | Promise<string>;

/** Full-width SHA-256 as lowercase hex. Unkeyed: fine for a single-tenant deployment. */
export const sha256Digest: DigestFn = (canonical) =>
  // The one-shot hash (Node >= 20.12) makes no Hash object: a few times faster for an input this small.
  hash('sha256', canonical, 'hex');

/**
 * {@link hmacSha256Digest} got no usable secret: often an unset environment
 * variable, or one set to spaces or a stray newline.
 */
export class InvalidDigestSecretError extends ToolReceiptsError {
  readonly code = 'digest.invalid_secret';
  constructor(secret: unknown) {
    const got =
      secret === undefined
        ? 'undefined (an unset environment variable reads as undefined)'
        : Buffer.isBuffer(secret)
          ? secret.byteLength === 0
            ? 'an empty Buffer'
            : 'a Buffer of whitespace only (a key file holding a stray newline, say)'
          : typeof secret === 'string' && secret !== ''
            ? 'a string of whitespace only'
            : describeValue(secret);
    super(
      `hmacSha256Digest needs a non-empty string or Buffer as its secret; got ${got}. Pass a stable secret, for instance from your secret store`,
    );
  }
}

/** Space, tab, line feed, vertical tab, form feed, carriage return: a Buffer of these alone is no key. */
const WHITESPACE_BYTES: ReadonlySet<number> = new Set([0x20, 0x09, 0x0a, 0x0b, 0x0c, 0x0d]);

/**
 * Keyed SHA-256 (HMAC) as lowercase hex.
 *
 * Tool arguments are often guessable (an email address, a ticket title). An
 * unkeyed hash of them, stored in a receipt, lets anyone who can read Redis
 * confirm a guess by hashing it. With a secret key only the holder of the key
 * can do that, which is why multi-tenant deployments should prefer this
 * digest. Keep the secret stable: rotating it makes every stored receipt
 * unreachable, so a retry after rotation would execute again.
 */
export function hmacSha256Digest(secret: string | Buffer): DigestFn {
  // A secret of whitespace alone is a variable set by mistake, not a key: anyone could guess it.
  const usable =
    typeof secret === 'string' ? secret.trim() !== '' : Buffer.isBuffer(secret) && secret.some((byte) => !WHITESPACE_BYTES.has(byte));
  if (!usable) throw new InvalidDigestSecretError(secret);
  return (canonical) => createHmac('sha256', secret).update(canonical, 'utf8').digest('hex');
}

/**
 * The `argsHash` of a call: the digest of {@link canonicalJson} of the raw
 * arguments. Pass the arguments as the model sent them (after any repair),
 * not a schema's parsed output, which may have coerced or defaulted values.
 * Throws what `canonicalJson` throws.
 */
export async function toolCallArgsHash(args: unknown, digest: DigestFn = sha256Digest): Promise<string> {
  return await argsDigest(args, digest);
}

/**
 * {@link toolCallArgsHash} as `digest` gives it: the text at once from a
 * synchronous digest (the default), so a caller on the call path awaits
 * nothing it does not have to.
 * @internal
 */
export function argsDigest(args: unknown, digest: DigestFn): string | Promise<string> {
  return digest(canonicalJson(args));
}

/**
 * The key as one string, for stores without composite keys. Each part is
 * written as `<length>:<text>`, so a part full of delimiters or digits can
 * never be read as a boundary: the encoding is injective.
 */
export function toolCallReceiptKeyString(key: ToolCallReceiptKey): string {
  return [key.tenantId, key.runId, key.toolName, key.argsHash].map((part) => `${part.length}:${part}`).join('');
}

/** A stable idempotency key for every attempt of one call, to hand a provider: a digest of the receipt key. */
export function idempotencyKeyFor(key: ToolCallReceiptKey): string {
  return `trc_${hash('sha256', toolCallReceiptKeyString(key), 'hex').slice(0, 40)}`;
}

/**
 * True when `text` is well-formed Unicode: no UTF-16 surrogate without its
 * pair. Such a string has no UTF-8 form, so Redis would store another name
 * (U+FFFD) and every later read would show it.
 */
export function isWellFormedText(text: string): boolean {
  // Node 20's V8 has String.prototype.isWellFormed (ES2024; the ES2022 lib does not declare it):
  // several times faster than the regex, and every claim checks four names.
  return (text as string & { isWellFormed(): boolean }).isWellFormed();
}

/** A tenant, run or tool name that is not well-formed Unicode; nothing was written. */
export class MalformedNameError extends ToolReceiptsError {
  readonly code = 'identity.malformed_name';
  constructor(readonly what: string) {
    super(
      `the ${what} contains a lone UTF-16 surrogate, so it cannot be stored as itself; pass well-formed Unicode text (String.prototype.toWellFormed() repairs it)`,
    );
  }
}

/** Throws {@link MalformedNameError} for the first name that is not well-formed. */
export function assertWellFormedNames(names: Readonly<Record<string, string>>): void {
  // for-in, not Object.entries: every claim checks four names, and the entries array is garbage.
  for (const what in names) {
    if (!isWellFormedText(names[what]!)) throw new MalformedNameError(what);
  }
}
