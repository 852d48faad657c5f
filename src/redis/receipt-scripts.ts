/**
 * The receipt scripts and the command names they are defined under.
 */
import type { ScriptDefinition } from './scripts.js';

/** Command names; prefixed so they cannot clash with Redis commands or other packages' scripts. */
export const SCRIPT = {
  claim: 'toolReceiptsClaim',
  reclaim: 'toolReceiptsReclaim',
  complete: 'toolReceiptsComplete',
  completeClaim: 'toolReceiptsCompleteClaim',
  claimGroup: 'toolReceiptsClaimGroup',
  fail: 'toolReceiptsFail',
  releaseLostClaim: 'toolReceiptsReleaseLostClaim',
  heartbeat: 'toolReceiptsHeartbeat',
  recordStep: 'toolReceiptsRecordStep',
  flagAmbiguous: 'toolReceiptsFlagAmbiguous',
  outcomeUnknown: 'toolReceiptsOutcomeUnknown',
  resolve: 'toolReceiptsResolve',
  inspect: 'toolReceiptsInspect',
  pruneIndex: 'toolReceiptsPruneIndex',
  breakerRecord: 'toolReceiptsBreakerRecord',
  tally: 'toolReceiptsTally',
  reconcileBegin: 'toolReceiptsReconcileBegin',
  reconcileSettle: 'toolReceiptsReconcileSettle',
  reclaimKeyed: 'toolReceiptsReclaimKeyed',
  noteJob: 'toolReceiptsNoteJob',
  countRun: 'toolReceiptsCountRun',
  recountRun: 'toolReceiptsRecountRun',
  commitBatch: 'toolReceiptsCommitBatch',
} as const;

/**
 * Every script the receipt store uses. Each transition also takes the run's
 * counting set as its last key; claim and complete take the breaker hash before it.
 */
export const RECEIPT_SCRIPTS: readonly ScriptDefinition[] = [
  { name: SCRIPT.claim, file: 'claim-4.lua', numberOfKeys: 4 },
  { name: SCRIPT.reclaim, file: 'reclaim-3.lua', numberOfKeys: 3 },
  { name: SCRIPT.complete, file: 'complete-4.lua', numberOfKeys: 4 },
  { name: SCRIPT.completeClaim, file: 'complete-claim-5.lua', numberOfKeys: 5 },
  { name: SCRIPT.claimGroup, file: 'claim-group-N.lua', numberOfKeys: 'any' },
  { name: SCRIPT.fail, file: 'fail-3.lua', numberOfKeys: 3 },
  { name: SCRIPT.releaseLostClaim, file: 'release-lost-claim-3.lua', numberOfKeys: 3 },
  { name: SCRIPT.heartbeat, file: 'heartbeat-3.lua', numberOfKeys: 3 },
  { name: SCRIPT.recordStep, file: 'record-step-3.lua', numberOfKeys: 3 },
  { name: SCRIPT.flagAmbiguous, file: 'flag-ambiguous-3.lua', numberOfKeys: 3 },
  { name: SCRIPT.outcomeUnknown, file: 'outcome-unknown-3.lua', numberOfKeys: 3 },
  { name: SCRIPT.resolve, file: 'resolve-3.lua', numberOfKeys: 3 },
  { name: SCRIPT.inspect, file: 'inspect-1.lua', numberOfKeys: 1 },
  { name: SCRIPT.pruneIndex, file: 'prune-index-2.lua', numberOfKeys: 2 },
  { name: SCRIPT.tally, file: 'tally-N.lua', numberOfKeys: 'any' },
  { name: SCRIPT.countRun, file: 'count-run-1.lua', numberOfKeys: 1 },
  { name: SCRIPT.recountRun, file: 'recount-run-N.lua', numberOfKeys: 'any' },
  { name: SCRIPT.commitBatch, file: 'commit-batch-N.lua', numberOfKeys: 'any' },
];

/** The script the breaker store uses. */
export const BREAKER_SCRIPTS: readonly ScriptDefinition[] = [
  { name: SCRIPT.breakerRecord, file: 'breaker-record-1.lua', numberOfKeys: 1 },
];

/** The scripts that settle an expired opaque attempt without a person: reconcile and keyed re-runs. */
export const RECONCILE_SCRIPTS: readonly ScriptDefinition[] = [
  { name: SCRIPT.reconcileBegin, file: 'reconcile-begin-3.lua', numberOfKeys: 3 },
  { name: SCRIPT.reconcileSettle, file: 'reconcile-settle-3.lua', numberOfKeys: 3 },
  { name: SCRIPT.reclaimKeyed, file: 'reclaim-keyed-3.lua', numberOfKeys: 3 },
  { name: SCRIPT.noteJob, file: 'note-job-1.lua', numberOfKeys: 1 },
];
