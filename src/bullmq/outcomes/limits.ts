/**
 * What a call that its limits do not let run ends with: a rejected result
 * the model reads (`onLimit: 'refuse'`), or the job parked on the server
 * clock until the window allows it (`'wait'`), without using an attempt.
 * The counting itself is in src/limits (`limitCall`).
 */
import { DelayedError } from 'bullmq';
import type { LimitGate, LimitRefusal, LimitVerdict } from '../../limits/call-limits.js';
import type { ClaimResult } from '../../redis/receipts/store.js';
import type { JobScope, ReadyCall } from '../runtime.js';
import { throwIfInterrupted } from '../call/interruption.js';
import { takeWokenWhileRunning } from '../turn/park-job.js';
import { toolResultBlock as block, type ToolResultBlock } from '../../core/job-data.js';

/**
 * A call its limits refused before its claim (nothing written on its
 * receipt), or whose cost could not be counted: the rejected result, or,
 * for a limit that waits, the job parked until the window resets.
 */
export async function overLimit(
  callRun: ReadyCall,
  gate: Extract<LimitGate, { kind: 'refused' | 'invalid_cost' }>,
): Promise<ToolResultBlock> {
  const { call, facts } = callRun;
  if (gate.kind === 'invalid_cost') {
    facts.limitCostNotCounted(gate.error.limit, gate.error.message);
    facts.answered('reject', 'rejected');
    // The team's own words only: what the cost function returned may echo the model's arguments.
    const content = `This call was not run: its cost under the limit "${gate.error.limit}" could not be counted.`;
    return block(call, 'rejected', { content, is_error: true });
  }
  return await refused(callRun, gate.refusal);
}

async function refused(callRun: ReadyCall, refusal: LimitRefusal): Promise<ToolResultBlock> {
  const { runtime, scope, call, facts } = callRun;
  facts.overLimit(refusal.limit, refusal.onLimit, refusal.retryAtMs);
  if (refusal.onLimit === 'refuse') {
    facts.answered('reject', 'rejected');
    return block(call, 'rejected', { content: refusal.text, is_error: true });
  }
  const delay = Math.max(0, refusal.retryAtMs - refusal.nowMs) + Math.floor(Math.random() * runtime.waitJitterMs);
  await park(scope, refusal.nowMs, delay);
  facts.answered('wait', 'waited');
  throw new DelayedError(`tool call ${call.id} waits ${delay} ms for the limit "${refusal.limit}" to reset`);
}

/**
 * Parks the job until `nowMs + delayMs` on the server clock; a job cancelled
 * meanwhile is not parked to come back, and one a cap's release woke while
 * it still ran comes back at once.
 */
async function park(scope: JobScope, nowMs: number, delayMs: number): Promise<void> {
  throwIfInterrupted(scope.job.id ?? '', scope.abort);
  await scope.park(nowMs, delayMs, async () => takeWokenWhileRunning(scope.job));
}

/**
 * An attempt the claim started but its limits or caps do not let run:
 * settled at once as never started (so the next claim runs it afresh),
 * what its gates took given back only then (`giveBack`), then refused or
 * parked; a reservation revoked under a slow claim parks the job briefly
 * to reserve again.
 */
export async function notRunUnderLimit(
  callRun: ReadyCall,
  claim: ClaimResult,
  verdict: Extract<LimitVerdict, { run: false }>,
  giveBack: () => Promise<void>,
): Promise<ToolResultBlock> {
  const { runtime, scope, call, key, facts } = callRun;
  const why = 'refusal' in verdict ? verdict.refusal.text : 'its limit reservation was revoked before its claim; reserving again';
  if (claim.fence) await runtime.keyspace.receipts.fail(key, claim.fence, { error: why, tier: 'neverStarted' }).catch(() => undefined);
  // After the settle: a worker that dies between the two leaves a settled attempt its shares still count, which the
  // next bind finds counted, not a running one (ambiguous once its lease lapses) that nothing counts.
  await giveBack();
  if ('refusal' in verdict) return await refused(callRun, verdict.refusal);
  const delay = Math.floor(Math.random() * runtime.waitJitterMs);
  await park(scope, claim.serverNowMs ?? Date.now(), delay);
  facts.answered('wait', 'waited');
  throw new DelayedError(`tool call ${call.id}: ${why}`);
}
