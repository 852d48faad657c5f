/**
 * The receipt scripts and the command names they are defined under.
 */
import type { ScriptDefinition } from './scripts.js';

/** Command names; prefixed so they cannot clash with Redis commands or other packages' scripts. */
export const SCRIPT = {
  claim: 'toolReceiptsClaim',
  reclaim: 'toolReceiptsReclaim',
  complete: 'toolReceiptsComplete',
  fail: 'toolReceiptsFail',
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
} as const;

/** Every script the receipt store uses. Claim and complete also take the run's breaker hash as KEYS[3]. */
export const RECEIPT_SCRIPTS: readonly ScriptDefinition[] = [
  { name: SCRIPT.claim, file: 'claim-3.lua', numberOfKeys: 3 },
  { name: SCRIPT.reclaim, file: 'reclaim-2.lua', numberOfKeys: 2 },
  { name: SCRIPT.complete, file: 'complete-3.lua', numberOfKeys: 3 },
  { name: SCRIPT.fail, file: 'fail-2.lua', numberOfKeys: 2 },
  { name: SCRIPT.heartbeat, file: 'heartbeat-2.lua', numberOfKeys: 2 },
  { name: SCRIPT.recordStep, file: 'record-step-2.lua', numberOfKeys: 2 },
  { name: SCRIPT.flagAmbiguous, file: 'flag-ambiguous-2.lua', numberOfKeys: 2 },
  { name: SCRIPT.outcomeUnknown, file: 'outcome-unknown-2.lua', numberOfKeys: 2 },
  { name: SCRIPT.resolve, file: 'resolve-2.lua', numberOfKeys: 2 },
  { name: SCRIPT.inspect, file: 'inspect-1.lua', numberOfKeys: 1 },
  { name: SCRIPT.pruneIndex, file: 'prune-index-2.lua', numberOfKeys: 2 },
  { name: SCRIPT.tally, file: 'tally-N.lua', numberOfKeys: 'any' },
];

/** The script the breaker store uses. */
export const BREAKER_SCRIPTS: readonly ScriptDefinition[] = [
  { name: SCRIPT.breakerRecord, file: 'breaker-record-1.lua', numberOfKeys: 1 },
];

/** The scripts that settle an expired opaque attempt without a person: reconcile and keyed re-runs. */
export const RECONCILE_SCRIPTS: readonly ScriptDefinition[] = [
  { name: SCRIPT.reconcileBegin, file: 'reconcile-begin-2.lua', numberOfKeys: 2 },
  { name: SCRIPT.reconcileSettle, file: 'reconcile-settle-2.lua', numberOfKeys: 2 },
  { name: SCRIPT.reclaimKeyed, file: 'reclaim-keyed-2.lua', numberOfKeys: 2 },
  { name: SCRIPT.noteJob, file: 'note-job-1.lua', numberOfKeys: 1 },
];
