/**
 * Structural equality for JSON-like values, used to prove that a block was not
 * changed.
 *
 * Arrays compare element by element; plain objects compare by their own
 * enumerable keys regardless of key order, with an `undefined`-valued key
 * treated as absent (as JSON would). Other objects (dates, maps, class
 * instances) are equal only when they are the same object, which errs on the
 * side of "changed". Structures nested deeper than {@link DEEP_EQUAL_MAX_DEPTH}
 * (or cyclic ones) compare as unequal rather than overflowing the stack.
 */
export function deepEqual(a: unknown, b: unknown): boolean {
  return equalAt(a, b, 0);
}

/** How deep {@link deepEqual} descends before it gives up and answers `false`. */
export const DEEP_EQUAL_MAX_DEPTH = 512;

function equalAt(a: unknown, b: unknown, depth: number): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (depth >= DEEP_EQUAL_MAX_DEPTH) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) {
      if (!equalAt(a[i], b[i], depth + 1)) return false;
    }
    return true;
  }
  if (!isPlain(a) || !isPlain(b)) return false;
  const aKeys = definedKeys(a);
  const bKeys = definedKeys(b);
  if (aKeys.length !== bKeys.length) return false;
  for (const key of aKeys) {
    if (!Object.prototype.hasOwnProperty.call(b, key)) return false;
    const left = (a as Record<string, unknown>)[key];
    const right = (b as Record<string, unknown>)[key];
    if (!equalAt(left, right, depth + 1)) return false;
  }
  return true;
}

function isPlain(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function definedKeys(value: object): string[] {
  return Object.keys(value).filter((key) => (value as Record<string, unknown>)[key] !== undefined);
}
