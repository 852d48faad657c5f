/**
 * The in-flight caps on a call's path, entered only for a tool a cap
 * covers: the slots taken before the claim (refused or parked in line when
 * none is free), adopted when the claim executes, and freed after the
 * settle, waking the jobs first in line. The slots themselves are in
 * src/limits (`capCall`, `HeldSlots`).
 */
import type { ToolResultBlock } from '../../core/job-data.js';
import { capCall, type HeldSlots } from '../../limits/cap-call.js';
import { receiptRedisKey } from '../../redis/keys.js';
import { parseAttemptJob } from '../../redis/receipts/reads/record.js';
import { attemptJobText } from '../../redis/receipts/transitions/claim.js';
import type { JobScope, ReadyCall } from '../runtime.js';
import { noteWokenWhileRunning, promoteParkedJob } from '../turn/park-job.js';
import { overLimit } from './limits.js';

/**
 * The gate of the caps before the claim: the call's slots to carry to its
 * claim, or the block of a refused call (a parked one throws `DelayedError`).
 */
export async function passCaps(callRun: ReadyCall): Promise<{ readonly slots?: HeldSlots; readonly block?: ToolResultBlock }> {
  const { runtime, scope, key } = callRun;
  const receiptKey = receiptRedisKey(runtime.keyspace.settings.prefix, key);
  const options = {
    leaseMs: runtime.keyspace.settings.leaseMs,
    waker: wakerOf(scope),
    wake: (jobs: readonly string[]) => wakeWaiters(scope, jobs),
  };
  const gate = await capCall(runtime.limits, key, receiptKey, options);
  if (gate.kind === 'free') return {};
  if (gate.kind === 'refused') {
    // What it gave up (slots of other caps, a place in line) may be what the calls first in line wait for.
    await wakeWaiters(scope, gate.wake);
    return { block: await overLimit(callRun, gate) };
  }
  return { slots: gate.slots };
}

/**
 * After its attempt ended: the call's slots are freed if its receipt is
 * settled (`completed`: this attempt's complete settled it), and the jobs
 * whose turn came are woken.
 */
export async function capsEnded(callRun: ReadyCall, slots: HeldSlots, completed: boolean): Promise<void> {
  await wakeWaiters(callRun.scope, await slots.ended(completed).catch(() => []));
}

/** Frees the slots of a call that will not execute, and wakes the jobs whose turn came. */
export async function releaseSlots(scope: JobScope, slots: HeldSlots | undefined): Promise<void> {
  if (slots !== undefined) await wakeWaiters(scope, await slots.release());
}

/** The job a place in line names: this job's queue, BullMQ prefix and id, to be promoted when its turn comes. */
function wakerOf(scope: JobScope): string {
  return scope.attemptJob === undefined ? '' : attemptJobText(scope.attemptJob);
}

/**
 * Promotes each parked job of `wakers`, of this job's queue or another on
 * the same Redis. One not parked yet, or on another Redis, is not woken
 * here: it asks again when its park ends, within a lease.
 */
export async function wakeWaiters(scope: JobScope, wakers: readonly string[]): Promise<void> {
  if (wakers.length === 0) return;
  const own = wakerOf(scope);
  await Promise.all(
    wakers.map(async (text) => {
      // This very job, still running (a call beside the waiting one freed the slot): it comes back once parked.
      if (text === own && own !== '') return noteWokenWhileRunning(scope.job);
      // A place in line names its job as a receipt's job:<attempt> field does (attemptJobText).
      const parked = parseAttemptJob(text);
      if (parked !== null) await promoteParkedJob(scope.job, scope.attemptJob, parked);
    }),
  );
}
