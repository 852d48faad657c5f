import { DelayedError, UnrecoverableError } from 'bullmq';
import { throwIfInterrupted } from './interruption.js';
import type { ToolCall, ToolJobData, ToolResultBlock } from './job-data.js';
import { runToolCall, type CallRuntime, type JobScope } from './run-call.js';

/** Whether a call may run side by side with its neighbours: the job says so, or its tool does. */
const runsSideBySide = (rt: CallRuntime, data: ToolJobData, call: ToolCall): boolean =>
  data.parallel === true || rt.tools.get(call.name)?.parallel === true;

/**
 * Run a job's calls in order, appending each block to `results` as it ends.
 * Consecutive calls that may run side by side run as one concurrent group;
 * any other call runs alone. A job whose lock was lost or that was cancelled
 * starts nothing more (see `throwIfInterrupted`). What a call throws ends the
 * turn; `results` then holds the blocks of the calls that ended, in call
 * order, for the caller to keep.
 */
export async function runTurn(rt: CallRuntime, scope: JobScope, results: ToolResultBlock[]): Promise<void> {
  const { calls } = scope.data;
  for (let start = 0; start < calls.length; ) {
    let end = start + 1;
    if (runsSideBySide(rt, scope.data, calls[start]!)) {
      while (end < calls.length && runsSideBySide(rt, scope.data, calls[end]!)) end++;
    }
    throwIfInterrupted(scope.job.id ?? '', scope.abort);
    if (end - start === 1) results.push(await runToolCall(rt, scope, calls[start]!));
    else await runSideBySide(rt, scope, calls.slice(start, end), results);
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
  const ended = await Promise.allSettled(calls.map((call) => runToolCall(rt, deferred, call)));
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
