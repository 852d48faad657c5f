/**
 * Every operation of the receipt store and the reconcile store on one
 * receipt, named, for the tests that hold each of them to a rule on a
 * receipt no operation may touch (a corrupt one, one a newer release wrote):
 * a new operation added here is held to every such rule at once.
 */
import type { ToolCallReceiptKey } from '../../src/core/identity.js';
import type { ReceiptStore } from '../../src/redis/receipts/store.js';
import type { ReconcileStore } from '../../src/redis/receipts/transitions/reconcile-store.js';

/** An operation on the receipt of `key`, given the store. */
export type StoreOperation = [name: string, run: (store: ReceiptStore, key: ToolCallReceiptKey) => Promise<unknown>];

/**
 * The writes and the one-receipt read, each with `fence` where it needs one;
 * `reconciles` makes the reconcile store beside `store`. A claim group leaves
 * a receipt it cannot use to the call's own claim, which says why.
 */
export function receiptOperations(
  fence: { attempt: number; epoch: string },
  reconciles: (store: ReceiptStore) => ReconcileStore,
): StoreOperation[] {
  return [
    ['claim', (s, k) => s.claim(k, { effect: 'opaque' })],
    ['complete', (s, k) => s.complete(k, fence, 'x')],
    [
      'completeAndClaim',
      (s, k) => s.completeAndClaim(k, fence, 'x', { key: { ...k, argsHash: `${k.argsHash}-next` }, options: { effect: 'opaque' } }),
    ],
    [
      'claimGroup',
      async (s, k) => {
        const [ahead] = await s.claimGroup([{ key: k, options: { effect: 'opaque' } }]);
        if (ahead !== null) throw new Error('expected the group to leave this receipt to its own claim');
        return s.claim(k, { effect: 'opaque' });
      },
    ],
    ['fail', (s, k) => s.fail(k, fence, { error: 'x' })],
    ['markOutcomeUnknown', (s, k) => s.markOutcomeUnknown(k, fence, 'x')],
    ['heartbeat', (s, k) => s.heartbeat(k, fence)],
    ['recordStep', (s, k) => s.recordStep(k, fence, 'step', 1)],
    ['flagAmbiguous', (s, k) => s.flagAmbiguous(k, fence, 'opaque')],
    ['resolve', (s, k) => s.resolve(k, { attemptsSeen: 1, outcome: 'failed', error: 'x' })],
    ['inspect', (s, k) => s.inspect(k)],
    ['ReconcileStore.begin', (s, k) => reconciles(s).begin(k, fence, 1_000, 'w')],
    [
      'ReconcileStore.settle',
      (s, k) => reconciles(s).settle(k, { ...fence, reconciles: 1, worker: 'w' }, { verdict: 'unknown', note: 'n' }),
    ],
    ['ReconcileStore.noteJob', (s, k) => reconciles(s).noteJob(k, { queue: 'q', prefix: 'bull', id: '1' })],
    [
      'ReconcileStore.reclaimKeyed',
      (s, k) => reconciles(s).reclaimKeyed(k, { lost: fence, keyWindowMs: 60_000, leaseMs: 1_000, owner: 'w' }),
    ],
  ];
}
