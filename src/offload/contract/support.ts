/**
 * What the contract's cases share: the store factory type, the case shape and
 * small assertions.
 */
import assert from 'node:assert/strict';
import { TOOL_RESULT_REF_CONFLICT_CODE } from '../errors.js';
import type { Awaitable, ToolResultProvenance, ToolResultStore } from '../types.js';

/** Makes a fresh, empty store for one contract case. */
export type ToolResultStoreFactory = () => Awaitable<ToolResultStore>;

/**
 * One case of the store contract. `run` throws (an `AssertionError` from
 * `node:assert`) when the store breaks the rule the case names. A case marked
 * `optional` covers an optional member; when the store lacks that member it
 * resolves to `'skipped'` instead of passing silently.
 */
export interface ToolResultStoreContractCase {
  readonly name: string;
  readonly optional?: boolean;
  run(makeStore: ToolResultStoreFactory): Promise<void | 'skipped'>;
}

/** Assert that `action` rejects with a ref conflict carrying these owners. */
export async function assertRefConflict(
  action: () => Awaitable<unknown>,
  ref: string,
  stored: ToolResultProvenance,
  incoming: ToolResultProvenance,
): Promise<void> {
  await assert.rejects(
    async () => action(),
    (error: unknown) => {
      const e = error as { code?: unknown; ref?: unknown; stored?: unknown; incoming?: unknown };
      assert.equal(e.code, TOOL_RESULT_REF_CONFLICT_CODE);
      assert.equal(e.ref, ref);
      assert.deepEqual(e.stored, stored);
      assert.deepEqual(e.incoming, incoming);
      return true;
    },
  );
}

/** Read the whole text under `ref`, or `undefined`. */
export async function readAll(store: ToolResultStore, ref: string): Promise<string | undefined> {
  return (await store.get(ref))?.content;
}

/** A deterministic pseudo-random integer source (a 32-bit LCG). */
export function seededRandom(seed: number): (bound: number) => number {
  let state = seed >>> 0;
  return (bound) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state % bound;
  };
}

/** Text mixing 1-, 2-, 3- and 4-byte UTF-8 characters, `length` code units or one more. */
export function mixedText(length: number, seed = 7): string {
  const pieces = ['a', 'Z', '0', ' ', '\n', '\u00e9', '\u00df', '\u4e2d', '\u6587', '\ud83d\ude00', '\ud834\udd1e'];
  const random = seededRandom(seed);
  let text = '';
  while (text.length < length) text += pieces[random(pieces.length)];
  return text;
}
