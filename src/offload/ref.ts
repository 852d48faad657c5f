/**
 * Refs of offloaded results: minted unguessable, parsed back, refused when not
 * well-formed.
 */
import { createHash } from 'node:crypto';
import { InvalidToolResultRefSegmentError, UnsafeToolResultRefError } from './errors.js';

/** Every ref minted by {@link buildToolResultRef} starts with this. */
export const TOOL_RESULT_REF_PREFIX = 'tr_';

/**
 * Joins the segments of a minted ref. It is outside the segment charset, so a
 * minted ref splits back into its segments in exactly one way.
 */
export const REF_SEGMENT_SEPARATOR = '~';

/** Characters a segment may keep verbatim: ASCII letters, digits, `_` and `-`. */
export const NATIVE_REF_SEGMENT_CHARSET = /^[A-Za-z0-9_-]+$/;

/** Longest segment kept verbatim; a longer one is folded. */
export const MAX_REF_SEGMENT_CHARS = 128;

/** How much readable text a folded segment keeps before its digest. */
const FOLD_BASE_CHARS = 32;

/** Shape of a folded segment: `.` + readable base + `.` + 64 hex digits. */
const FOLDED_SEGMENT = /^\.[A-Za-z0-9_-]{0,32}\.[0-9a-f]{64}$/;

/**
 * Longest ref {@link buildToolResultRef} can mint with up to four segments
 * (session, tool call and two finer coordinates): the prefix, four segments at
 * the verbatim ceiling (a folded segment is at most 98 characters, shorter
 * than the ceiling) and three separators. A caller passing more segments owns
 * the wider bound.
 */
export const MAX_MINTED_TOOL_RESULT_REF_CHARS =
  TOOL_RESULT_REF_PREFIX.length + 4 * MAX_REF_SEGMENT_CHARS + 3 * REF_SEGMENT_SEPARATOR.length;

/** Longest ref any store accepts, minted or not. */
export const MAX_TOOL_RESULT_REF_CHARS = 2048;

// C0 and C1 control characters, DEL, and unpaired surrogates.
const CONTROL_CHAR = /[\u0000-\u001f\u007f-\u009f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Throw {@link UnsafeToolResultRefError} unless `ref` can key an entry on every
 * backend: a non-empty string of at most {@link MAX_TOOL_RESULT_REF_CHARS}
 * characters that is not `.` or `..` and holds no `/`, `\`, control character
 * or unpaired surrogate.
 *
 * The unpaired-surrogate rule exists because such text does not survive UTF-8:
 * two different refs would land on the same stored key. Every store applies
 * this same check on `put`, so a ref that works in tests works in production.
 */
export function assertSafeToolResultRef(ref: unknown): asserts ref is string {
  const reason = unsafeRefReason(ref);
  if (reason !== undefined) throw new UnsafeToolResultRefError(ref, reason);
}

/** `true` when {@link assertSafeToolResultRef} would accept `ref`. */
export function isSafeToolResultRef(ref: unknown): ref is string {
  return unsafeRefReason(ref) === undefined;
}

function unsafeRefReason(ref: unknown): string | undefined {
  if (typeof ref !== 'string') return 'not a string';
  if (ref.length === 0) return 'empty';
  if (ref.length > MAX_TOOL_RESULT_REF_CHARS) return `longer than ${MAX_TOOL_RESULT_REF_CHARS} characters`;
  if (ref === '.' || ref === '..') return 'a dot path segment';
  if (ref.includes('/') || ref.includes('\\')) return 'contains a path separator';
  if (CONTROL_CHAR.test(ref)) return 'contains a control character';
  if (LONE_SURROGATE.test(ref)) return 'contains an unpaired surrogate';
  return undefined;
}

function sha256Hex(text: string): string {
  // UTF-16LE keeps every code unit, unpaired surrogates included, so distinct
  // strings always hash distinct byte sequences.
  return createHash('sha256').update(Buffer.from(text, 'utf16le')).digest('hex');
}

/**
 * Map one raw segment into the segment charset. Verbatim when the segment is
 * non-empty, native-charset and within the ceiling; otherwise folded into
 * `.<readable base>.<sha256 of the raw segment>`. The two forms cannot meet:
 * only folded segments contain `.`.
 */
export function toolResultRefSegment(raw: string): string {
  if (raw.length <= MAX_REF_SEGMENT_CHARS && NATIVE_REF_SEGMENT_CHARSET.test(raw)) return raw;
  const base = raw.slice(0, FOLD_BASE_CHARS).replace(/[^A-Za-z0-9_-]/g, '_');
  return `.${base}.${sha256Hex(raw)}`;
}

/**
 * Mint the ref for a tool result: `tr_` followed by the session, the tool call
 * and any `extraSegments`, each passed through {@link toolResultRefSegment} and
 * joined by {@link REF_SEGMENT_SEPARATOR}.
 *
 * Ids already in the native charset (`toolu_…`, `call_…`, UUIDs) appear
 * unchanged. Anything else is folded with a digest, so two different inputs
 * never mint one ref, and refs with different segment counts never coincide.
 * Use `extraSegments` for a finer coordinate (for example a content digest)
 * instead of splicing it into the tool call id.
 */
export function buildToolResultRef(sessionId: string, toolCallId: string, ...extraSegments: string[]): string {
  const raw = [sessionId, toolCallId, ...extraSegments];
  const segments = raw.map((segment, position) => {
    if (typeof segment !== 'string') throw new InvalidToolResultRefSegmentError(position);
    return toolResultRefSegment(segment);
  });
  return TOOL_RESULT_REF_PREFIX + segments.join(REF_SEGMENT_SEPARATOR);
}

/**
 * A ref segment naming the content itself: the first 128 bits of its SHA-256,
 * as 32 hex digits. Putting it in the ref keeps a recurring tool call id from
 * pointing a second, different result at the first one's stored text.
 */
export function toolResultContentSegment(text: string): string {
  return sha256Hex(text).slice(0, 32);
}

/**
 * The session segment of a ref shaped like a minted one, or `undefined`.
 * Used only to choose where an entry is stored, never to decide who owns it:
 * any caller can write a ref of this shape.
 */
export function mintedRefSessionSegment(ref: string): string | undefined {
  if (!ref.startsWith(TOOL_RESULT_REF_PREFIX)) return undefined;
  const end = ref.indexOf(REF_SEGMENT_SEPARATOR, TOOL_RESULT_REF_PREFIX.length);
  if (end < 0) return undefined;
  const segment = ref.slice(TOOL_RESULT_REF_PREFIX.length, end);
  if (segment.length <= MAX_REF_SEGMENT_CHARS && NATIVE_REF_SEGMENT_CHARSET.test(segment)) return segment;
  return FOLDED_SEGMENT.test(segment) ? segment : undefined;
}
