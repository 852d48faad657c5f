/**
 * One job's turn: its calls run in order, or side by side where allowed, and
 * their results gathered.
 */
import { DelayedError, UnrecoverableError } from 'bullmq';
import { throwIfInterrupted } from './interruption.js';
import type { ToolCall, ToolJobData, ToolResultBlock } from './job-data.js';
import type { CallRuntime, JobScope } from './call-runtime.js';
import { errorText } from './failure-policy.js';
import { claimSideBySide, NextCall } from './next-call.js';
import { runToolCall } from './run-call.js';

/** Whether a call may run side by side with its neighbours: the job says so, or its tool does. */
const runsSideBySide = (rt: CallRuntime, data: ToolJobData, call: ToolCall): boolean =>
  data.parallel === true || rt.tools.get(call.name)?.parallel === true;

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
export async function runTurn(rt: CallRuntime, scope: JobScope, results: ToolResultBlock[]): Promise<void> {
  const { calls } = scope.data;
  const groupEnd = (start: number): number => {
    let end = start + 1;
    if (runsSideBySide(rt, scope.data, calls[start]!)) {
      while (end < calls.length && runsSideBySide(rt, scope.data, calls[end]!)) end++;
    }
    return end;
  };
  // The call about to run, as the call before it staged (and maybe claimed) it.
  let self: NextCall | undefined;
  let next: NextCall | undefined;
  for (let start = 0; start < calls.length;) {
    const end = groupEnd(start);
    try {
      throwIfInterrupted(scope.job.id ?? '', scope.abort);
      if (end - start === 1) {
        next = end < calls.length && groupEnd(end) === end + 1 ? new NextCall(rt, scope, calls[end]!) : undefined;
        results.push(await runToolCall(rt, scope, calls[start]!, { self, next }));
      } else {
        await runSideBySide(rt, scope, calls.slice(start, end), results);
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
async function runSideBySide(rt: CallRuntime, scope: JobScope, calls: ToolCall[], results: ToolResultBlock[]): Promise<void> {
  let due: { serverNowMs: number; delayMs: number } | undefined;
  const deferred: JobScope = {
    ...scope,
    park: async (serverNowMs, delayMs) => {
      if (due === undefined || serverNowMs + delayMs < due.serverNowMs + due.delayMs) due = { serverNowMs, delayMs };
    },
  };
  // Claimed together, in one round trip, when two or more of them would claim now.
  const members = calls.map((call) => new NextCall(rt, scope, call));
  await claimSideBySide(rt, members);
  const ended = await Promise.allSettled(calls.map((call, i) => runToolCall(rt, deferred, call, { self: members[i] })));
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
    await scope.park(due.serverNowMs, due.delayMs);
    throw wait;
  }
}
