/**
 * The result-store contract: the cases every `ToolResultStore` backend must
 * pass, runnable under any test runner.
 */
import type { ToolResultStore } from '../types.js';
import { basicCases } from './basics.js';
import { deletionCases } from './deletion.js';
import { ownerCases } from './owners.js';
import { sliceCases } from './slices.js';
import type { ToolResultStoreContractCase } from './support.js';

export type { ToolResultStoreContractCase, ToolResultStoreFactory } from './support.js';

/**
 * The behaviour every {@link ToolResultStore} backend must show, as plain
 * cases runnable under any test runner. Each case gets a factory that returns
 * a fresh, empty store, and throws on a violation. Example with vitest:
 *
 * ```ts
 * for (const c of toolResultStoreContract()) {
 *   it(c.name, async (ctx) => {
 *     if ((await c.run(() => new MyStore())) === 'skipped') ctx.skip();
 *   });
 * }
 * ```
 *
 * Optional cases (`optional: true`) cover `deleteBySession` and resolve to
 * `'skipped'` when the store does not have it.
 */
export function toolResultStoreContract(): ToolResultStoreContractCase[] {
  return [...basicCases, ...ownerCases, ...sliceCases, ...deletionCases];
}
