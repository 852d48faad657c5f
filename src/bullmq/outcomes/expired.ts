/**
 * Claiming a call whose opaque attempt lost its lease, for tools that can
 * settle that themselves instead of leaving it to a person: a `keyed` tool is
 * run again with the same idempotency key while its provider's window is
 * open, and a tool with `reconcile` is asked (by one worker under a fenced
 * reconcile lease, while the others wait) whether the effect landed.
 * Entered only when a claim finds such an attempt (see `ToolCallRun.claim`
 * in call/call-run.ts). Keyed re-runs, reconcile and the transactional outcome
 * read all end in the one claim result the wrapper acts on (replay,
 * execute, wait or ambiguous), so they are kept together.
 */
import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import type { ToolCallReceiptKey } from '../../core/identity.js';
import { receiptEffectOf } from '../../core/tool-effect.js';
import { FencedOutError, type AttemptFence } from '../../redis/errors.js';
import type { AttemptJob, ReconcileVerdict } from '../../redis/receipts/reads/record.js';
import type { ClaimOptions, ClaimResult } from '../../redis/receipts/store.js';
import type { ReceiptsKeyspace } from '../../redis/receipts/keyspace.js';
import type { VerdictToRecord } from '../../redis/receipts/transitions/reconcile-store.js';
import { idempotencyKeyFor } from '../../core/identity.js';
import type { AnyToolDefinition, ReconcileAnswer, ReconcileContext } from '../tools/define-tool.js';
import { settleFromOutcomeRow } from './transactional.js';
import type { ToolCall, ToolJobData } from '../../core/job-data.js';
import type { CallFacts } from '../call/facts.js';

/** Default of `reconcileTimeoutMs`. */
export const DEFAULT_RECONCILE_TIMEOUT_MS = 10_000;

/** Rounds of claim and settle before falling back to a plain claim; each lost round means the receipt moved on. */
const MAX_ROUNDS = 4;

/** A claim result, plus how an expired attempt was settled on the way, if it was. */
export type CallClaim = ClaimResult & {
  /** Set when a reconcile answered in this claim. */
  readonly reconciled?: ReconcileVerdict;
  /** Set when this claim re-ran a keyed call inside its window. */
  readonly keyedRerun?: true;
};

/** The parts of the wrapper's runtime the settling uses. */
export interface SettleRuntime {
  readonly keyspace: ReceiptsKeyspace;
  shape(value: unknown, call: ToolCall, tool: AnyToolDefinition, data: ToolJobData): unknown;
}

/** One call's claim, with the job it belongs to. */
export interface SettleScope {
  readonly runtime: SettleRuntime;
  /** `abort.signal` is read only when a reconcile runs: most claims never make one. */
  readonly scope: {
    readonly job: Job;
    readonly data: ToolJobData;
    readonly abort: { readonly signal: AbortSignal };
    readonly attemptJob: AttemptJob | undefined;
  };
  readonly call: ToolCall;
  readonly tool: AnyToolDefinition;
  readonly key: ToolCallReceiptKey;
  readonly args: unknown;
  /** Where the call's facts go (its log lines and events among them). */
  readonly facts: CallFacts;
}

/** How long a tool's reconcile may take. */
export const reconcileTimeoutOf = (tool: AnyToolDefinition): number => tool.reconcileTimeoutMs ?? DEFAULT_RECONCILE_TIMEOUT_MS;

/** The reconcile lease outlives the timeout by a full receipt lease, so the verdict is written while it is still held. */
export const reconcileLeaseMs = (tool: AnyToolDefinition, leaseMs: number): number => reconcileTimeoutOf(tool) + leaseMs;

/**
 * A claim that found an expired opaque attempt of a tool that can settle it
 * (`first`, its answer): settle it (a keyed re-run, a reconcile, or a
 * transactional call's outcome row) and claim again, for a few rounds while
 * the receipt moves on under it. Returns the claim the call acts on.
 */
export async function settleExpired(callRun: SettleScope, first: ClaimResult, options: ClaimOptions): Promise<CallClaim> {
  const { runtime, tool, key } = callRun;
  const job = options.job;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const claim = round === 0 ? first : await runtime.keyspace.receipts.claim(key, options);
    if (claim.decision.kind !== 'ambiguous' || !claim.lostFence) return claim;
    const lost = claim.lostFence;
    // A removed tool is never run again; it is left ambiguous for a person.
    if (tool.effect === 'keyed' && claim.toolRemoval === undefined) {
      const rerun = await runtime.keyspace.reconciles.reclaimKeyed(key, {
        lost,
        keyWindowMs: tool.keyWindowMs ?? 0,
        leaseMs: runtime.keyspace.settings.leaseMs,
        owner: runtime.keyspace.settings.owner,
        ...(job ? { job } : {}),
      });
      if (rerun.kind === 'movedOn') continue;
      if (rerun.kind === 'busy') return waiting(claim, rerun);
      if (rerun.kind === 'reclaimed') {
        const { attempt } = rerun.fence;
        callRun.facts.keyedRerun(claim.redisKey, attempt, tool.keyWindowMs);
        return { ...claim, decision: { kind: 'execute', attempt }, attempt, fence: rerun.fence, keyedRerun: true };
      }
    }
    // A transactional call is settled from its outcome row even when its tool was removed: that reads, never runs.
    if ((tool.reconcile !== undefined && claim.toolRemoval === undefined) || tool.effect === 'transactional') {
      const settled = await reconcileLost(callRun, claim, lost);
      if (settled === 'movedOn') continue;
      return settled;
    }
    const ambiguousMs = await runtime.keyspace.receipts.flagAmbiguous(key, lost, receiptEffectOf(tool));
    if (ambiguousMs === null) continue;
    return { ...claim, ambiguousMs };
  }
  const last = await runtime.keyspace.receipts.claim(key, options);
  // The receipt kept moving under every round: a transactional call comes back later rather than end ambiguous.
  if (tool.effect === 'transactional' && last.decision.kind === 'ambiguous') {
    return waiting(last, { remainingMs: runtime.keyspace.settings.leaseMs, nowMs: last.serverNowMs ?? Date.now() });
  }
  return last;
}

const waiting = (claim: ClaimResult, busy: { remainingMs: number; nowMs: number }): CallClaim => ({
  ...claim,
  decision: { kind: 'wait', reason: 'another worker is reconciling this call' },
  leaseRemainingMs: busy.remainingMs,
  serverNowMs: busy.nowMs,
});

/** What a reconcile is told about the lost attempt of a call. */
export function lostAttemptContext(lost: {
  key: ToolCallReceiptKey;
  attempt: number;
  attemptStartedMs: number;
  data: ToolJobData;
  call: ToolCall;
  job: Job;
  logger: Logger;
}): Omit<ReconcileContext, 'signal'> {
  return {
    idempotencyKey: idempotencyKeyFor(lost.key),
    attempt: lost.attempt,
    attemptStartedMs: lost.attemptStartedMs,
    tenantId: lost.data.tenantId,
    runId: lost.data.runId,
    sessionId: lost.data.sessionId,
    callId: lost.call.id,
    job: lost.job,
    logger: lost.logger,
  };
}

/** Ask the tool about the lost attempt under the reconcile lease, record its verdict, and act on it. */
async function reconcileLost(callRun: SettleScope, claim: ClaimResult, lostFence: AttemptFence): Promise<CallClaim | 'movedOn'> {
  const lost = lostFence.attempt;
  const { runtime, tool, key } = callRun;
  const timeoutMs = reconcileTimeoutOf(tool);
  const start = await runtime.keyspace.reconciles.begin(
    key,
    lostFence,
    reconcileLeaseMs(tool, runtime.keyspace.settings.leaseMs),
    runtime.keyspace.settings.owner,
  );
  switch (start.kind) {
    case 'movedOn':
      return 'movedOn';
    case 'busy':
      return waiting(claim, start);
    case 'unknown':
      return {
        ...claim,
        decision: { kind: 'ambiguous', reason: `a reconcile of attempt ${lost} could not tell whether its effect happened` },
        ambiguousMs: start.ambiguousMs,
        reconciled: 'unknown',
      };
    case 'begun':
      break;
  }

  const startedAt = performance.now();
  const context = lostAttemptContext({
    ...callRun.scope,
    key,
    attempt: lost,
    attemptStartedMs: start.attemptStartedMs,
    call: callRun.call,
    logger: callRun.facts.logger(),
  });
  // A removed tool's call is not started again here: the receipt is failed (never started) instead.
  const leaseMs = claim.toolRemoval === undefined ? { leaseMs: runtime.keyspace.settings.leaseMs } : {};
  const job = callRun.scope.attemptJob;
  /** Records the verdict under the reconcile's fence; 'movedOn' when another attempt or reconcile came first. */
  const recordVerdict = async (answer: ReconcileAnswer, historyNote?: string) => {
    const noted = historyNote === undefined ? {} : { note: historyNote };
    const toRecord: VerdictToRecord =
      answer.status === 'completed'
        ? { verdict: 'completed', result: await runtime.shape(answer.result, callRun.call, tool, callRun.scope.data), ...noted }
        : answer.status === 'not_started'
          ? { verdict: 'not_started', ...leaseMs, ...(job ? { job } : {}), ...noted }
          : { verdict: 'unknown', note: answer.reason ?? 'the tool could not tell' };
    try {
      const owner = await runtime.keyspace.reconciles.settle(
        key,
        { ...lostFence, reconciles: start.reconciles, worker: runtime.keyspace.settings.owner, begunMs: start.nowMs },
        toRecord,
      );
      return { toRecord, owner };
    } catch (error) {
      if (!(error instanceof FencedOutError)) throw error;
      callRun.facts.reconcileFencedOut(lost, toRecord.verdict);
      return 'movedOn' as const;
    }
  };
  // A transactional call is settled from its outcome row, the verdict recorded while no attempt of the lifetime
  // can open or commit; a database that cannot answer throws, leaving the reconcile lease to lapse.
  const recorded =
    tool.effect === 'transactional'
      ? await settleFromOutcomeRow(tool, claim.redisKey, lostFence, recordVerdict)
      : await recordVerdict(await askReconcile(tool, callRun.args, context, callRun.scope.abort.signal, timeoutMs));
  if (recorded === 'movedOn') return 'movedOn';
  const { toRecord, owner } = recorded;

  const note = toRecord.verdict === 'unknown' ? toRecord.note : undefined;
  callRun.facts.reconciled(claim.redisKey, lost, toRecord.verdict, note, Math.round(performance.now() - startedAt));
  switch (toRecord.verdict) {
    case 'completed':
      return { ...claim, decision: { kind: 'replay' }, result: toRecord.result, reconciled: 'completed' };
    case 'not_started':
      return {
        ...claim,
        decision: { kind: 'execute', attempt: owner.attempt },
        attempt: owner.attempt,
        fence: owner,
        reconciled: 'not_started',
      };
    case 'unknown':
      return {
        ...claim,
        decision: {
          kind: 'ambiguous',
          reason: `attempt ${lost} lost its lease and the tool's reconcile could not tell whether its effect happened (${note})`,
        },
        reconciled: 'unknown',
      };
  }
}

/**
 * Ask a tool's `reconcile` about a lost attempt. A throw, a malformed answer
 * or a timeout is `unknown`, saying which; `ctx.signal` aborts at the timeout
 * or when `outer` does.
 */
export async function askReconcile(
  tool: AnyToolDefinition,
  args: unknown,
  lost: Omit<ReconcileContext, 'signal'>,
  outer: AbortSignal,
  timeoutMs: number,
): Promise<ReconcileAnswer> {
  const timeout = new AbortController();
  const ctx: ReconcileContext = { ...lost, signal: AbortSignal.any([timeout.signal, outer]) };
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<ReconcileAnswer>((resolve) => {
    timer = setTimeout(() => {
      timeout.abort();
      resolve({ status: 'unknown', reason: `reconcile timed out after ${timeoutMs} ms` });
    }, timeoutMs);
  });
  try {
    const answer = await Promise.race([Promise.resolve().then(() => tool.reconcile!(args, ctx)), timedOut]);
    return validAnswer(answer);
  } catch (error) {
    return { status: 'unknown', reason: `reconcile threw: ${error instanceof Error ? error.message : String(error)}` };
  } finally {
    clearTimeout(timer);
  }
}

function validAnswer(answer: unknown): ReconcileAnswer {
  const status = (answer as { status?: unknown } | null)?.status;
  if (status === 'completed' && answer !== null && typeof answer === 'object' && 'result' in answer) return answer as ReconcileAnswer;
  if (status === 'not_started' || status === 'unknown') return answer as ReconcileAnswer;
  return {
    status: 'unknown',
    reason: `reconcile returned ${JSON.stringify(answer) ?? String(answer)}, not {status: 'completed', result} | {status: 'not_started'} | {status: 'unknown'}`,
  };
}
