/**
 * The codes each field of a state is written with in its canonical bytes
 * (encoding.ts writes them, decoding.ts reads them back): the position of
 * a value in its table.
 */
import type { Effect, Ending, JobStatus, Pc, ReceiptStatus, Txn } from './state.js';

export const STATUSES: readonly ReceiptStatus[] = ['absent', 'awaiting', 'approved', 'denied', 'running', 'completed', 'failed'];
export const EFFECTS: readonly Effect[] = ['opaque', 'resumable', 'transactional'];
export const DECIDERS = ['none', 'approver', 'expiry'] as const;
export const JOBS: readonly JobStatus[] = ['waiting', 'active', 'done'];
export const TXNS: readonly Txn[] = ['none', 'shared', 'inserted', 'blocked', 'queued', 'exclusive', 'dead'];
export const ENDINGS: readonly Ending[] = ['none', 'done', 'wait', 'ambiguous', 'denied', 'refused', 'retry', 'notRun', 'corrupt'];
export const PCS: readonly Pc[] = [
  'idle',
  'gate',
  'reserve',
  'settleExpired',
  'commitExpired',
  'releaseExpired',
  'boundOn',
  'claim',
  'releaseLost',
  'reclaim',
  'flag',
  'reconcileBegin',
  'sweepLifetime',
  'lockLifetime',
  'readOutcome',
  'reconcileSettle',
  'settleShare',
  'commitHeld',
  'releaseShare',
  'bind',
  'commitShare',
  'releaseUnused',
  'readSteps',
  'effect',
  'stepEffect',
  'recordStep',
  'txBegin',
  'txConfirm',
  'txInsert',
  'txCommit',
  'complete',
  'fail',
  'outcomeUnknown',
  'unbindShare',
  'giveBackShare',
];
/** A table's values to their codes: an object, looked up once per field of every state encoded. */
function codesOf<T extends string>(table: readonly T[]): Readonly<Record<T, number>> {
  return Object.fromEntries(table.map((value, i) => [value, i])) as Record<T, number>;
}
export const STATUS_CODE = codesOf(STATUSES);
export const EFFECT_CODE = codesOf(EFFECTS);
export const DECIDER_CODE = codesOf(DECIDERS);
export const JOB_CODE = codesOf(JOBS);
export const TXN_CODE = codesOf(TXNS);
export const ENDING_CODE = codesOf(ENDINGS);
export const PC_CODE = codesOf(PCS);
/** A byte for "none of these" (a revoked binding). */
export const NOTHING = 255;
