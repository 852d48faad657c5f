/**
 * The text a tool result is for the model: a success envelope unwrapped, then
 * JSON (cycles and bigints handled) or the string itself; and the answer a
 * tool returns to say its provider failed. Pure.
 */

/**
 * A tool's answer that is an error for the model while the call counts as
 * completed: the tool ran and its provider answered with a failure (an MCP
 * result with `isError: true`, say). The receipt records it like any result,
 * so it is replayed, never run again, and the model gets it with `is_error`.
 * Return it from `execute`; throwing instead makes it a failed call.
 */
export class ToolErrorResult {
  /** @param value - What the model reads, shaped like any tool result (offloaded when large). */
  constructor(readonly value: unknown) {}
}

const ENVELOPE_KEYS = new Set(['__type', 'success', 'value']);

/**
 * Strip a success envelope so the model sees the value itself.
 *
 * A success envelope is a plain object with `success: true`, an own `value`,
 * and no keys besides those two and an optional `__type`. Its `value` is
 * returned (one level only). Anything else, failure envelopes and objects
 * that merely happen to have a `success` field included, is returned as is.
 */
export function unwrapToolResultForLlm(result: unknown): unknown {
  if (typeof result !== 'object' || result === null || Array.isArray(result)) return result;
  const proto = Object.getPrototypeOf(result);
  if (proto !== Object.prototype && proto !== null) return result;
  const record = result as Record<string, unknown>;
  if (record.success !== true || !Object.hasOwn(record, 'value')) return result;
  for (const key of Object.keys(record)) if (!ENVELOPE_KEYS.has(key)) return result;
  return record.value;
}

/**
 * The text the model would see for `result`. Strings pass through unchanged.
 * Other values are JSON with `indent` spaces (default none), where a reference
 * back to an enclosing object becomes `"[Circular]"` and a bigint becomes its
 * decimal string. Values JSON has no text for (`undefined`, functions,
 * symbols), or whose own `toJSON` throws, fall back to `String(value)`.
 * Never throws.
 */
export function stringifyToolResult(result: unknown, indent?: number): string {
  if (typeof result === 'string') return result;
  try {
    // Most results hold no cycle and no bigint: JSON.stringify without a replacer called on
    // every key is then the same text, several times faster. It throws on either (or on a
    // throwing toJSON), and the careful pass below takes over.
    const json = JSON.stringify(result, null, indent);
    return json === undefined ? plainString(result) : json;
  } catch {
    // a cycle, a bigint or a throwing toJSON
  }
  try {
    const json = JSON.stringify(result, circularSafeReplacer(), indent);
    if (json !== undefined) return json;
  } catch {
    // fall through to the plain conversion
  }
  return plainString(result);
}

function plainString(value: unknown): string {
  try {
    return String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/**
 * A replacer that tracks the chain of objects being serialized. `this` is the
 * holder of the current key, so popping the chain down to it leaves exactly
 * the ancestors of `value`; meeting one of them again is a cycle. Shared but
 * acyclic references are serialized each time they appear.
 */
function circularSafeReplacer(): (this: unknown, key: string, value: unknown) => unknown {
  const ancestors: object[] = [];
  return function replace(this: unknown, _key: string, value: unknown): unknown {
    if (typeof value === 'bigint') return value.toString();
    if (typeof value !== 'object' || value === null) return value;
    while (ancestors.length > 0 && ancestors[ancestors.length - 1] !== this) ancestors.pop();
    if (ancestors.includes(value)) return '[Circular]';
    ancestors.push(value);
    return value;
  };
}
