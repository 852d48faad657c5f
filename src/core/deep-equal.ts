/**
 * Structural equality for JSON-like values: the repair guard's proof that a
 * block was not changed, and the client's check that a job under a turn's id
 * carries the calls it submitted.
 *
 * Arrays compare element by element; plain objects compare by their own
 * enumerable keys regardless of key order, with an `undefined`-valued key
 * treated as absent (as JSON would). Other objects (dates, maps, class
 * instances) are equal only when they are the same object, which errs on the
 * side of "changed". Structures nested deeper than `maxDepth` (default
 * {@link DEEP_EQUAL_MAX_DEPTH}; cyclic ones too) compare as unequal. The walk
 * keeps its own stack, so no depth overflows the call stack: a caller whose
 * values came through JSON (no cycles) may pass `Infinity`.
 */
export function deepEqual(a: unknown, b: unknown, maxDepth = DEEP_EQUAL_MAX_DEPTH): boolean {
  const pending: Array<readonly [unknown, unknown, number]> = [[a, b, 0]];
  for (let pair = pending.pop(); pair !== undefined; pair = pending.pop()) {
    const [left, right, depth] = pair;
    if (Object.is(left, right)) continue;
    if (typeof left !== 'object' || typeof right !== 'object' || left === null || right === null) return false;
    if (depth >= maxDepth) return false;
    if (Array.isArray(left) || Array.isArray(right)) {
      if (!Array.isArray(left) || !Array.isArray(right) || left.length !== right.length) return false;
      for (let i = 0; i < left.length; i++) pending.push([left[i], right[i], depth + 1]);
      continue;
    }
    if (!isPlain(left) || !isPlain(right)) return false;
    const leftKeys = definedKeys(left);
    if (leftKeys.length !== definedKeys(right).length) return false;
    for (const key of leftKeys) {
      if (!Object.prototype.hasOwnProperty.call(right, key)) return false;
      pending.push([(left as Record<string, unknown>)[key], (right as Record<string, unknown>)[key], depth + 1]);
    }
  }
  return true;
}

/** How deep {@link deepEqual} descends by default before it gives up and answers `false`. */
export const DEEP_EQUAL_MAX_DEPTH = 512;

function isPlain(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function definedKeys(value: object): string[] {
  return Object.keys(value).filter((key) => (value as Record<string, unknown>)[key] !== undefined);
}
