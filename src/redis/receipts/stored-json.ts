/**
 * JSON text for values kept in a receipt (results and step values).
 *
 * `JSON.stringify` quietly turns a `Map` into `{}`, `NaN` into `null` and drops
 * functions; a replayed result or a resumed step built from that text would be
 * a different value from the one the tool produced. This refuses those values
 * instead, before anything is written.
 */
import { ReceiptValueNotSerializableError } from '../errors.js';

/** `undefined` at the top level: no value. Stored as an absent field, read back as `undefined`. */
export const NO_VALUE = '';

/**
 * JSON text of `value`, or {@link NO_VALUE} for `undefined`. `toJSON` is
 * honoured (a `Date` becomes its ISO string). `undefined` inside an object is
 * dropped and inside an array becomes `null`, exactly as in `JSON.stringify`.
 * Throws {@link ReceiptValueNotSerializableError} for functions, symbols,
 * `BigInt`, `Map`, `Set`, weak collections, non-finite numbers and cycles.
 */
export function toStoredJson(value: unknown, what: string): string {
  if (value === undefined) return NO_VALUE;
  // The wrapper's results ({ content, is_error? }) and most step values take this path:
  // nothing in them JSON could alter, so no replacer needs to visit every key.
  if (isFlatJsonValue(value)) return JSON.stringify(value);
  let text: string | undefined;
  try {
    text = JSON.stringify(value, function replacer(this: unknown, key: string, v: unknown) {
      const where = key === '' ? 'the value' : `property ${JSON.stringify(key)}`;
      switch (typeof v) {
        case 'function':
        case 'symbol':
        case 'bigint':
          throw new ReceiptValueNotSerializableError(what, `${where} is a ${typeof v}`);
        case 'number':
          if (!Number.isFinite(v)) throw new ReceiptValueNotSerializableError(what, `${where} is ${v}`);
          return v;
        case 'object':
          if (v instanceof Map || v instanceof Set || v instanceof WeakMap || v instanceof WeakSet) {
            throw new ReceiptValueNotSerializableError(what, `${where} is a ${v.constructor.name}`);
          }
          return v;
        default:
          return v;
      }
    });
  } catch (err) {
    if (err instanceof ReceiptValueNotSerializableError) throw err;
    throw new ReceiptValueNotSerializableError(what, (err as Error).message, { cause: err });
  }
  if (text === undefined) throw new ReceiptValueNotSerializableError(what, 'JSON.stringify produced nothing');
  return text;
}

/** A string, boolean, null or finite number: JSON writes it exactly as it is. */
const isExactScalar = (v: unknown): boolean =>
  v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));

/** An exact scalar, or a plain object whose own enumerable values all are. */
function isFlatJsonValue(value: unknown): boolean {
  if (isExactScalar(value)) return true;
  if (typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return false;
  for (const key of Object.keys(value as object)) {
    if (!isExactScalar((value as Record<string, unknown>)[key])) return false;
  }
  return true;
}

/** Parses text written by {@link toStoredJson}; {@link NO_VALUE} reads back as `undefined`. */
export function fromStoredJson(text: string): unknown {
  return text === NO_VALUE ? undefined : JSON.parse(text);
}
