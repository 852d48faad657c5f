/**
 * A job's turn: its calls run in order, each at most once, or side by side
 * where the job or the tool allows it; the claims the turn can make ahead
 * (see `./claims-ahead.ts`); and how a job that was interrupted ends.
 */
import { DelayedError, UnrecoverableError } from 'bullmq';
import type { ToolCall, ToolResultBlock, ToolJobData } from '../../core/job-data.js';
import { runToolCall } from '../call/call-run.js';
import { interruptionOf, throwIfInterrupted } from '../call/interruption.js';
import { JobLockLostError } from '../errors.js';
import type { CallRuntime, JobScope } from '../runtime.js';
import { errorText } from '../tools/failure-text.js';
import { ClaimGroup, NextCall } from './claims-ahead.js';

/** Whether a call may run side by side with its neighbours: the job says so, or its tool does. */
const runsSideBySide = (runtime: CallRuntime, data: ToolJobData, call: ToolCall): boolean =>
  data.parallel === true || runtime.tools.get(call.name)?.parallel === true;

/** Where the group that starts at `start` ends: after the call, or after the run of side-by-side calls it opens. */
function groupEnd(runtime: CallRuntime, data: ToolJobData, start: number): number {
  const { calls } = data;
  let end = start + 1;
  if (runsSideBySide(runtime, data, calls[start]!)) {
    while (end < calls.length && runsSideBySide(runtime, data, calls[end]!)) end++;
  }
  return end;
}

/**
 * Run a job's calls in order, appending each block to `results` as it ends.
 * Consecutive calls that may run side by side run as one concurrent group;
 * any other call runs alone. A call that runs alone may have its claim
 * carried by the complete of the call before it, when that one ran alone
 * too (see `NextCall`). A job whose lock was lost or that was cancelled
 * starts nothing more (see `throwIfInterrupted`), and an attempt claimed
 * ahead for a call it will not run is released. What a call throws ends the
 * turn; `results` then holds the blocks of the calls that ended, in call
 * order, for the caller to keep.
 */
export async function runTurn(runtime: CallRuntime, scope: JobScope, results: ToolResultBlock[]): Promise<void> {
  const { calls } = scope.data;
  // The call about to run, as the call before it staged (and maybe claimed) it.
  let self: NextCall | undefined;
  let next: NextCall | undefined;
  for (let start = 0; start < calls.length;) {
    const end = groupEnd(runtime, scope.data, start);
    try {
      if (scope.abort.aborted) throwIfInterrupted(scope.job.id ?? '', scope.abort);
      if (end - start === 1) {
        next = end < calls.length && groupEnd(runtime, scope.data, end) === end + 1 ? new NextCall(runtime, scope, calls[end]!) : undefined;
        // A call with no neighbour to carry a claim to or from (a one-call job) is linked to none.
        const links = self === undefined && next === undefined ? undefined : { self, next };
        results.push(await runToolCall(runtime, scope, calls[start]!, links));
      } else {
        await runSideBySide(runtime, scope, calls.slice(start, end), results);
      }
    } catch (error) {
      for (const unrun of [self, next]) await unrun?.release(`the job stopped before call ${unrun.call.id} started: ${errorText(error)}`);
      throw error;
    }
    self = next;
    next = undefined;
    start = end;
  }
}

/**
 * Run `calls` concurrently, each with its own receipt, lease and fence, and
 * append the blocks of those that ended to `results` in call order. Every
 * call runs to its end before anything is thrown, so a wait or an ambiguity
 * of one never cuts the others off (their receipts settle, and a later
 * delivery replays them). Then: the first error that stops the job
 * (UnrecoverableError), else the first other error, is thrown; else, when a
 * call waits, the job is parked once, until the earliest wait is due.
 *
 * Parking is deferred because a parked job's BullMQ lock is no longer
 * renewed: the calls still running would be aborted as if the lock were lost.
 */
async function runSideBySide(runtime: CallRuntime, scope: JobScope, calls: ToolCall[], results: ToolResultBlock[]): Promise<void> {
  let due: { serverNowMs: number; delayMs: number } | undefined;
  const comeBacks: (() => Promise<boolean>)[] = [];
  const deferred: JobScope = {
    ...scope,
    park: async (serverNowMs, delayMs, comeBack) => {
      if (due === undefined || serverNowMs + delayMs < due.serverNowMs + due.delayMs) due = { serverNowMs, delayMs };
      if (comeBack !== undefined) comeBacks.push(comeBack);
    },
  };
  // Claimed together, in one round trip, when two or more of them would claim now.
  const members = calls.map((call) => new NextCall(runtime, scope, call));
  await ClaimGroup.form(runtime, members);
  const ended = await Promise.allSettled(calls.map((call, i) => runToolCall(runtime, deferred, call, { self: members[i] })));
  // A call that stopped before taking its claim (the job was interrupted) never started its effect.
  for (const member of members) await member.release(`the job stopped before call ${member.call.id} started`);
  let failure: { error: unknown } | undefined;
  let wait: DelayedError | undefined;
  for (const outcome of ended) {
    if (outcome.status === 'fulfilled') results.push(outcome.value);
    else if (outcome.reason instanceof DelayedError) wait ??= outcome.reason;
    else if (failure === undefined || (outcome.reason instanceof UnrecoverableError && !(failure.error instanceof UnrecoverableError))) {
      failure = { error: outcome.reason };
    }
  }
  if (failure !== undefined) throw failure.error;
  if (wait !== undefined && due !== undefined) {
    const comeBack = async () => (await Promise.all(comeBacks.map((asked) => asked().catch(() => false)))).some(Boolean);
    // The job's own park: one cancelled (or whose lock was lost) while its calls ran stops there instead.
    await scope.park(due.serverNowMs, due.delayMs, comeBacks.length > 0 ? comeBack : undefined);
    throw wait;
  }
}

/**
 * How an interrupted job ends, whatever its turn came to (`outcome`: the
 * error it threw, or none when it finished). The interruption replaces any
 * error that would have retried the job (such as the failure of a tool that
 * stopped because of the abort), so a cancelled job never runs again
 * whatever `attempts` says; a cancelled job whose last call finished anyway
 * ends cancelled too. An error that already stops the job
 * (`UnrecoverableError`: an ambiguous call, a destructive failure) says more
 * and is kept, and so is a `DelayedError`, thrown once the job was already
 * parked; a job that lost its lock but finished every call returns its
 * results (every receipt is settled; if the lock is really gone, BullMQ
 * refuses the completion and a redelivery replays them). Returns
 * `undefined` when the job was not interrupted, or `outcome` stands.
 */
export function interruptedEnding(
  jobId: string,
  signal: Pick<AbortSignal, 'aborted' | 'reason'>,
  outcome: { readonly error?: unknown },
): Error | undefined {
  if (!signal.aborted) return undefined;
  const interruption = interruptionOf(jobId, signal);
  if (interruption === undefined || outcome.error === interruption) return undefined;
  if (!('error' in outcome) && interruption instanceof JobLockLostError) return undefined;
  if (outcome.error instanceof UnrecoverableError || outcome.error instanceof DelayedError) return undefined;
  return interruption;
}
