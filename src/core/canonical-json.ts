/**
 * Canonical JSON of a call's arguments: one text per value, so equal arguments
 * digest alike.
 */
import { ToolReceiptsError } from './errors.js';

/**
 * How deep `canonicalJson` will follow nested objects and arrays before it
 * refuses. Deep enough for any honest argument bag; shallow enough that no
 * caller has to wonder about stack limits, because the walk is iterative anyway.
 */
export const CANONICAL_JSON_MAX_DEPTH = 512;

/** Why a value has no faithful canonical form. */
export type CanonicalJsonErrorReason = 'unsupported_type' | 'non_finite_number' | 'cycle' | 'too_deep';

/**
 * Thrown when `canonicalJson` meets a value it cannot represent without
 * loss. A lossy form would let two different argument bags hash alike, and in
 * a hash that decides whether a side effect already happened that is worse
 * than failing loudly.
 */
export class CanonicalJsonError extends ToolReceiptsError {
  readonly code: `canonical_json.${CanonicalJsonErrorReason}`;
  /** JSONPath-like location of the offending value, e.g. `$.to[2]`. */
  readonly path: string;
  readonly reason: CanonicalJsonErrorReason;

  constructor(reason: CanonicalJsonErrorReason, path: string, detail: string) {
    super(`canonicalJson cannot represent the value at ${path}: ${detail}`);
    this.reason = reason;
    this.code = `canonical_json.${reason}`;
    this.path = path;
  }
}

type Frame =
  | { kind: 'array'; items: readonly unknown[]; index: number; holder: object; depth: number }
  | { kind: 'object'; keys: string[]; source: Record<string, unknown>; index: number; holder: object; depth: number };

/**
 * The path of the value being visited, from the frames of its containers
 * (each frame's index is one past the child in hand). Built only for an
 * error: building it for every value cost more than the rest of the walk.
 */
function pathOf(stack: readonly Frame[]): string {
  let path = '$';
  for (const frame of stack) {
    path += frame.kind === 'array' ? `[${frame.index - 1}]` : pathSegment(frame.keys[frame.index - 1]!);
  }
  return path;
}

/**
 * Serialize a value so that structurally equal values give byte-equal text.
 *
 * - Object keys are sorted by UTF-16 code units; arrays keep their order.
 * - `undefined` (as an object value or an array slot) becomes `null`, so an
 *   absent value and a missing key stay distinguishable.
 * - `toJSON` is applied exactly where `JSON.stringify` would apply it (a `Date`
 *   becomes its ISO string); numbers and strings are written as
 *   `JSON.stringify` writes them.
 * - Anything else that has no faithful JSON form throws
 *   {@link CanonicalJsonError}: `Map`, `Set`, class instances without
 *   `toJSON`, functions, symbols, `BigInt`, `NaN`, `±Infinity`, cycles, and
 *   nesting deeper than {@link CANONICAL_JSON_MAX_DEPTH}.
 *
 * The walk is iterative, so hostile nesting ends in the depth error, never in
 * a stack overflow.
 */
export function canonicalJson(value: unknown): string {
  const flat = flatObjectJson(value);
  if (flat !== undefined) return flat;
  const out: string[] = [];
  const open = new Set<object>();
  const stack: Frame[] = [];

  // Writes a scalar, or pushes a frame for a container; returns nothing.
  const visit = (raw: unknown, key: string, depth: number): void => {
    const v = unbox(applyToJson(raw, key));
    const scalar = scalarJson(v);
    if (scalar !== undefined) return void out.push(scalar);
    switch (typeof v) {
      case 'number':
        throw new CanonicalJsonError('non_finite_number', pathOf(stack), `${v} has no JSON form`);
      case 'bigint':
        throw new CanonicalJsonError('unsupported_type', pathOf(stack), 'a BigInt has no JSON form');
      case 'function':
        throw new CanonicalJsonError('unsupported_type', pathOf(stack), 'a function has no JSON form');
      case 'symbol':
        throw new CanonicalJsonError('unsupported_type', pathOf(stack), 'a symbol has no JSON form');
    }
    const obj = v as object;
    if (depth >= CANONICAL_JSON_MAX_DEPTH) {
      throw new CanonicalJsonError('too_deep', pathOf(stack), `nesting exceeds ${CANONICAL_JSON_MAX_DEPTH} levels`);
    }
    if (open.has(obj)) throw new CanonicalJsonError('cycle', pathOf(stack), 'the value contains itself');
    if (Array.isArray(obj)) {
      open.add(obj);
      out.push('[');
      stack.push({ kind: 'array', items: obj, index: 0, holder: obj, depth: depth + 1 });
      return;
    }
    assertPlainObject(obj, stack);
    open.add(obj);
    out.push('{');
    const keys = keysInCodeUnitOrder(obj);
    stack.push({ kind: 'object', keys, source: obj as Record<string, unknown>, index: 0, holder: obj, depth: depth + 1 });
  };

  visit(value, '', 0);
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    if (frame.kind === 'array') {
      if (frame.index >= frame.items.length) {
        out.push(']');
        open.delete(frame.holder);
        stack.pop();
        continue;
      }
      const i = frame.index++;
      if (i > 0) out.push(',');
      visit(frame.items[i], String(i), frame.depth);
    } else {
      if (frame.index >= frame.keys.length) {
        out.push('}');
        open.delete(frame.holder);
        stack.pop();
        continue;
      }
      const k = frame.keys[frame.index++]!;
      if (frame.index > 1) out.push(',');
      out.push(JSON.stringify(k), ':');
      visit(frame.source[k], k, frame.depth);
    }
  }
  return out.join('');
}

/**
 * The usual argument bag, a plain object of strings, numbers, booleans and
 * nulls, written in one pass with none of the walk's bookkeeping; the same
 * text the walk writes. Anything else (a nested value, a `toJSON`, a number
 * with no JSON form) is left to the walk: `undefined`.
 */
function flatObjectJson(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  if (!hasPlainPrototype(value) || typeof (value as { toJSON?: unknown }).toJSON === 'function') return undefined;
  const source = value as Record<string, unknown>;
  const keys = keysInCodeUnitOrder(source);
  let out = '{';
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const text = scalarJson(source[key]);
    if (text === undefined) return undefined;
    out += `${i > 0 ? ',' : ''}${JSON.stringify(key)}:${text}`;
  }
  return `${out}}`;
}

/** The text of a scalar with a JSON form (`undefined` written as `null`); `undefined` for anything else. */
function scalarJson(v: unknown): string | undefined {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string' || typeof v === 'boolean') return JSON.stringify(v);
  if (typeof v === 'number' && Number.isFinite(v)) return JSON.stringify(v);
  return undefined;
}

/** Whether an object is plain data by its prototype (`Object.prototype` or none). */
function hasPlainPrototype(obj: object): boolean {
  const proto: unknown = Object.getPrototypeOf(obj);
  return proto === Object.prototype || proto === null;
}

/** Compare two strings by UTF-16 code units, which is what `<` does on JS strings. */
function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Beyond this many keys an object's keys are sorted by `Array.prototype.sort`; up to it, in place by insertion. */
const INSERTION_SORT_KEYS = 16;

/**
 * An object's own enumerable keys in UTF-16 code unit order. Most argument
 * bags have a few keys, and `Array.prototype.sort` allocates a work area on
 * every call (this runs for every call's arguments): a few keys are put in
 * order in place instead, with the same comparison.
 */
function keysInCodeUnitOrder(obj: object): string[] {
  const keys = Object.keys(obj);
  if (keys.length > INSERTION_SORT_KEYS) return keys.sort(compareCodeUnits);
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!;
    let at = i - 1;
    for (; at >= 0 && keys[at]! > key; at--) keys[at + 1] = keys[at]!;
    keys[at + 1] = key;
  }
  return keys;
}

/** `toJSON` runs on objects and BigInts, with the property key, as in `JSON.stringify`. */
function applyToJson(v: unknown, key: string): unknown {
  if (v !== null && (typeof v === 'object' || typeof v === 'bigint')) {
    const toJSON = (v as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') return (toJSON as (k: string) => unknown).call(v, key);
  }
  return v;
}

/** Boxed primitives serialize as their primitive, as in `JSON.stringify`. */
function unbox(v: unknown): unknown {
  if (v instanceof Number || v instanceof String || v instanceof Boolean) return v.valueOf();
  return v;
}

/**
 * Only objects whose whole state sits on enumerable own keys survive a JSON
 * round trip. Everything else (Map, Set, class instances, boxed primitives)
 * would silently come out as `{}` and collide with an empty argument bag.
 */
function assertPlainObject(obj: object, stack: readonly Frame[]): void {
  if (hasPlainPrototype(obj)) return;
  const name = (obj as { constructor?: { name?: unknown } }).constructor?.name;
  const label = typeof name === 'string' && name.length > 0 ? name : 'an object with a custom prototype';
  throw new CanonicalJsonError(
    'unsupported_type',
    pathOf(stack),
    `${label} has no faithful JSON form (give it a toJSON method or pass plain data)`,
  );
}

function pathSegment(key: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}
