/**
 * One tool call, run at most once, as one object: {@link ToolCallRun}, made
 * once per call, whose methods read top to bottom in the order things
 * happen: stage the input, pass the gates (approval, limits), claim the
 * receipt, act on the decision (replay, wait, ambiguous, execute), execute
 * under the lease, complete or fail. Each outcome branch is a small file of
 * `../outcomes/`, entered only when the call takes it.
 * Over 300 lines: the whole path of a call, each step a method, so a reader
 * follows one class from its job to its complete.
 */
import { DelayedError } from 'bullmq';
import type { ToolCallReceiptKey } from '../../core/identity.js';
import { toolResultBlock as block, type ToolCall, type ToolResultBlock } from '../../core/job-data.js';
import { stringifyToolResult } from '../../core/result-text.js';
import { NeverStartedError, OutcomeUnknownError, REJECTION_REMOVAL_SUFFIX } from '../../core/tiers.js';
import type { HeldSlots } from '../../limits/cap-call.js';
import { CapSlotLostError } from '../../limits/caps.js';
import { limitCall, type LimitedCall } from '../../limits/call-limits.js';
import { CorruptReceiptError, FencedOutError, UnexpectedScriptReplyError, type AttemptFence } from '../../redis/errors.js';
import type { ClaimOptions, PrefetchedClaim, SettleResult } from '../../redis/receipts/store.js';
import { unrecoverable } from '../errors.js';
import { ambiguousOutcome } from '../outcomes/ambiguity.js';
import { passApprovalGate, type GatePassed } from '../outcomes/approval.js';
import { settleExpired, type CallClaim } from '../outcomes/expired.js';
import {
  abandoned,
  failureStands,
  fencedOutFailure,
  outcomeUnknown,
  settleFailure,
  settleInterrupted,
  takeoverOf,
} from '../outcomes/failure.js';
import { capsEnded, passCaps, releaseSlots, wakeWaiters } from '../outcomes/caps.js';
import { infrastructureFailure, isInfrastructureError } from '../outcomes/infrastructure.js';
import { notRunUnderLimit, overLimit } from '../outcomes/limits.js';
import { runTransactionalAttempt } from '../outcomes/transactional.js';
import type { CallAttempt, CallRuntime, CarriedCall, JobScope, PreparedCall, RecordedToolResult } from '../runtime.js';
import { runReadOnlyCall } from '../tools/read-only.js';
import { errorText } from '../tools/failure-text.js';
import { stageCall, type StagedCall } from '../tools/input.js';
import type { AnyToolDefinition } from '../tools/define-tool.js';
import type { NextCall } from '../turn/claims-ahead.js';
import { PARKED_DELIVERY_UNWIND_MS } from '../turn/park-job.js';
import { ExecutionContext, FenceWatch, LazyAbort, LeaseKeeper, NO_STEPS } from './execution.js';
import type { CallFacts } from './facts.js';
import { interruptionOf, throwIfInterrupted } from './interruption.js';

/** Gates passed again after claims that found no receipt before giving up (each means the receipt vanished once more). */
const MAX_APPROVAL_GATES = 3;

/**
 * How a call is linked to its neighbours in a sequential stretch of a turn:
 * `self` is this call as the call before staged it (and maybe claimed it, in
 * its complete); `next` is the call after it, which this call's complete may
 * claim. See `NextCall`.
 */
export interface CallLinks {
  readonly self?: NextCall;
  readonly next?: CarriedCall;
}

/**
 * Run one tool call at most once. Returns the block to hand back to the
 * model, or throws what BullMQ should see (DelayedError to come back later,
 * UnrecoverableError to stop, any other error to retry the job).
 */
export function runToolCall(runtime: CallRuntime, scope: JobScope, call: ToolCall, links: CallLinks = NO_LINKS): Promise<ToolResultBlock> {
  const { tenantId, runId } = scope.data;
  const facts = runtime.facts.start({ tenantId, runId, tool: call.name, callId: call.id, jobId: scope.job.id });
  // Handlers on the run, not an async frame around it: every call comes here.
  return new ToolCallRun(runtime, scope, call, facts, links).run().then(
    (result) => {
      facts.ended({ result });
      return result;
    },
    (error: unknown) => {
      facts.ended({ error });
      throw error;
    },
  );
}

/** A call run alone, linked to no neighbour. */
const NO_LINKS: CallLinks = {};

/** One call's run: what it is given, then what it learns, step by step. */
export class ToolCallRun implements CallAttempt {
  // Known once the call is staged (a call that never reaches its claim leaves them unset).
  tool!: AnyToolDefinition;
  key!: ToolCallReceiptKey;
  args: unknown;
  // Known once a claim starts an attempt.
  fence!: AttemptFence;
  attempt = 0;
  limited: LimitedCall | undefined;
  /** Its slots of the in-flight caps that cover its tool, from its gate to its settle. */
  slots: HeldSlots | undefined;
  /** Its approval gate asked a person about this call: its claim never starts a lifetime nobody approved. */
  private needsApproval = false;
  /** Its attempt's complete settled the receipt (so the caps need not read whether it is settled). */
  private completed = false;

  constructor(
    readonly runtime: CallRuntime,
    readonly scope: JobScope,
    readonly call: ToolCall,
    readonly facts: CallFacts,
    private readonly links: CallLinks,
    /** A tool that reported an unknown outcome was claimed again in this delivery: it settles it once. */
    readonly afterUnknownOutcome = false,
  ) {}

  get next(): CarriedCall | undefined {
    return this.links.next;
  }

  /** The call, from its staging to its answer. */
  async run(): Promise<ToolResultBlock> {
    const staging = this.stage();
    const refused = staging instanceof Promise ? await staging : staging;
    if (refused !== undefined) return refused;
    if (this.runtime.runsWithoutReceipt(this.tool)) {
      this.facts.decided({ decision: 'direct', attempt: undefined });
      return await runReadOnlyCall(this);
    }
    // A job whose lock was lost or that was cancelled (maybe while its input was repaired) claims nothing more.
    if (this.scope.abort.aborted) throwIfInterrupted(this.scope.job.id ?? '', this.scope.abort);
    // Most calls pass no gate: the async step is entered only by a call one covers.
    if (this.runtime.limits !== undefined || this.runtime.approvals?.of(this.tool)) {
      const gated = await this.passGates();
      if (gated !== undefined) return gated;
    }
    let claim = await this.claim();
    // The receipt the gate answered for was gone at the claim (it expired between them): the lifetime the
    // claim would have started was never approved, so the gate asks a person about it (and parks the job).
    for (let gates = 1; claim.approvalNeeded; gates++) {
      if (gates > MAX_APPROVAL_GATES) {
        await this.releaseGated();
        throw new UnexpectedScriptReplyError(
          'claim',
          `the receipt of ${claim.redisKey} was gone at ${gates} claims after its approval gate`,
        );
      }
      const denied = await this.passApproval();
      if (denied !== undefined) return denied;
      claim = await this.claim();
    }
    const answer = this.act(claim);
    return answer instanceof Promise ? await answer : answer;
  }

  /** Claims the call again at once, in this delivery (see `CallAttempt.claimAgain`). */
  claimAgain(): Promise<ToolResultBlock> {
    return new ToolCallRun(this.runtime, this.scope, this.call, this.facts, { next: this.links.next }, true).run();
  }

  /**
   * Looks the tool up and prepares the input (the call before may have done
   * it); the answer of a call that will not run. A promise only when the
   * staging is one: most calls stage without one.
   */
  private stage(): ToolResultBlock | undefined | Promise<ToolResultBlock | undefined> {
    const staging = this.links.self?.stage() ?? stageCall(this.runtime, this.scope, this.call);
    return staging instanceof Promise ? staging.then((staged) => this.staged(staged)) : this.staged(staging);
  }

  /** The staged call kept, or the answer of one that will not run. */
  private staged(staged: StagedCall): ToolResultBlock | undefined | Promise<ToolResultBlock | undefined> {
    const { runtime, call, facts } = this;
    if (staged.kind === 'unknownTool') {
      facts.answered('reject', 'rejected');
      return block(call, 'rejected', {
        content: `Unknown tool "${call.name}". Nothing was run. Available tools: ${[...runtime.tools.keys()].join(', ')}.`,
        is_error: true,
      });
    }
    this.tool = staged.tool;
    if (staged.kind === 'rejected') return this.rejected(staged.prepared);
    this.key = staged.key;
    this.args = staged.args;
    return undefined;
  }

  /** The answer of a call whose input was refused; one that counts toward the tool's removal is counted first. */
  private async rejected(prepared: Extract<PreparedCall, { ok: false }>): Promise<ToolResultBlock> {
    const { runtime, scope, call, facts } = this;
    let content = prepared.message;
    if (prepared.countsAsRejection) {
      const streak = await runtime.keyspace.breaker.recordRejection(scope.data.tenantId, scope.data.runId, this.tool.name);
      if (streak.removed) content += ` ${REJECTION_REMOVAL_SUFFIX}`;
    }
    facts.answered('reject', 'rejected');
    return block(call, 'rejected', { content, is_error: true });
  }

  /**
   * The gates before the claim: a tool with an approval rule passes its
   * gate (parked while a person decides, answered when denied); a call some
   * limit counts reserves its share, after a slot of each in-flight cap
   * that covers it (refused or parked when it does not fit).
   */
  private async passGates(): Promise<ToolResultBlock | undefined> {
    if (this.runtime.approvals?.of(this.tool)) {
      const denied = await this.passApproval();
      if (denied !== undefined) return denied;
    }
    if (this.runtime.limits === undefined) return undefined;
    const capped = await passCaps(this);
    if (capped.block !== undefined) return capped.block;
    this.slots = capped.slots;
    const gate = await limitCall(this.runtime.limits, this.key, this.args).catch(async (error: unknown) => {
      await releaseSlots(this.scope, this.slots);
      throw error;
    });
    this.limited = gate.kind === 'claim' ? gate.call : undefined;
    if (gate.kind !== 'refused' && gate.kind !== 'invalid_cost') return undefined;
    await releaseSlots(this.scope, this.slots);
    return await overLimit(this, gate);
  }

  /** What the gates took for a call that stops before its claim: limit shares given back, cap slots freed. */
  private async releaseGated(): Promise<void> {
    await this.limited?.release();
    await releaseSlots(this.scope, this.slots);
  }

  /**
   * The approval gate: the block of a denied call, or `undefined` when the
   * claim goes on (then whether a person was asked about the call is kept
   * for the claim). Passed again after a claim that found no receipt: the
   * call's limit shares then go back when it stops here (denied, or parked).
   */
  private async passApproval(): Promise<ToolResultBlock | undefined> {
    let passed: GatePassed;
    try {
      passed = await passApprovalGate(this);
    } catch (error) {
      await this.releaseGated();
      throw error;
    }
    if (passed.kind === 'claim') {
      this.needsApproval = passed.needsApproval;
      return undefined;
    }
    await this.releaseGated();
    this.facts.answered('denied', 'denied');
    return passed.block;
  }

  /**
   * Claims the receipt: one command, which also reads the tool's breaker
   * state in the run, unless the call before carried this claim in its
   * complete (a round trip of its own is then made, and observed, only when
   * the decision needs more commands). An expired opaque attempt of a tool
   * that can settle it (keyed, reconcile, transactional) is settled here.
   */
  private claim(): Promise<CallClaim> {
    const self = this.links.self;
    if (self !== undefined) return self.claimedAhead(this.facts).then((ahead) => this.claimWith(ahead));
    return this.claimWith(undefined);
  }

  /** The claim sent, or its answer taken from the claim made ahead (a round trip of its own only when it needs one). */
  private claimWith(ahead: PrefetchedClaim | undefined): Promise<CallClaim> {
    const sent = ahead?.answersAlone ? this.sendClaim(ahead) : this.facts.roundTrip('claim', () => this.sendClaim(ahead));
    return sent.catch((error: unknown) => this.claimFailed(error));
  }

  /** A claim that failed gives back what the gates took; a corrupt receipt fails the job for good. */
  private async claimFailed(error: unknown): Promise<never> {
    await this.releaseGated();
    // A corrupt receipt stays corrupt: retrying the job cannot help, and nothing was written.
    if (error instanceof CorruptReceiptError) {
      this.facts.corrupt(error);
      throw unrecoverable(error);
    }
    throw error;
  }

  private sendClaim(ahead: PrefetchedClaim | undefined): Promise<CallClaim> {
    const { runtime, scope, tool, key } = this;
    let options: ClaimOptions;
    try {
      options = runtime.claimOptions(tool, scope, this.needsApproval);
    } catch (error) {
      return Promise.reject(error);
    }
    const limited = this.limited;
    // The limits' binds go right behind the claim script, conditioned on its epoch: no round trip of their own.
    if (limited?.bindsBesideClaim && ahead === undefined) options.onSent = (epoch) => limited.bindBeside(epoch);
    // A handler on the reply, not an async frame around it: every claim comes here, and most are not ambiguous.
    return runtime.keyspace.receipts
      .claim(key, options, ahead)
      .then((claim: CallClaim) => (claim.decision.kind === 'ambiguous' ? this.claimedAmbiguous(claim, options) : claim));
  }

  /**
   * An ambiguous claim: an expired opaque attempt of a tool that can settle
   * it (keyed, reconcile, transactional) is settled here; a job that still
   * meets it ambiguous is noted on the receipt, so it can be retried once
   * the call is settled.
   */
  private async claimedAmbiguous(found: CallClaim, options: ClaimOptions): Promise<CallClaim> {
    const claim = options.settlesExpired && found.lostFence ? await settleExpired(this, found, options) : found;
    if (claim.decision.kind === 'ambiguous' && this.scope.attemptJob) {
      await this.runtime.keyspace.reconciles
        .noteJob(this.key, this.scope.attemptJob)
        .catch((error: unknown) => this.facts.jobNotNoted(error));
    }
    return claim;
  }

  /**
   * A gate's step after the claim (the limits' binds, the caps' adoption).
   * One that throws (Redis did not answer) after a claim that started an
   * attempt settles that attempt as never started, best effort, before the
   * error goes on, as a lost claim's is: its tool never ran, and left
   * running it would read as ambiguous once its lease passed.
   */
  private async gateAfterClaim<T>(claim: CallClaim, executes: boolean, step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (error) {
      if (executes && claim.fence !== undefined) {
        const why = `its limits could not be checked after its claim (${errorText(error)})`;
        await this.runtime.keyspace.receipts.fail(this.key, claim.fence, { error: why, tier: 'neverStarted' }).catch(() => undefined);
        await this.limited?.neverStarted().catch(() => undefined);
      }
      await releaseSlots(this.scope, this.slots).catch(() => undefined);
      throw error;
    }
  }

  /**
   * Acts on the claim's decision: replay, wait, ambiguous, or execute. A
   * call a gate covers passes the gate's step after the claim first
   * ({@link actGated}); the others go straight to {@link decided}.
   */
  private act(claim: CallClaim): ToolResultBlock | Promise<ToolResultBlock> {
    this.facts.claimed(claim.reconciled);
    if (this.limited !== undefined || this.slots !== undefined) return this.actGated(claim);
    return this.decided(claim);
  }

  /** {@link act} for a call a limit or a cap covers: its verdict after the claim, and what it gives back once executed. */
  private async actGated(claim: CallClaim): Promise<ToolResultBlock> {
    const executes = claim.decision.kind === 'execute' && claim.toolRemoval === undefined;
    const limited = this.limited;
    const verdict = limited && (await this.gateAfterClaim(claim, executes, () => limited.afterClaim(executes, claim.fence)));
    if (verdict?.run === false) {
      return await notRunUnderLimit(this, claim, verdict, async () => {
        await limited?.neverStarted();
        await releaseSlots(this.scope, this.slots);
      });
    }
    const slots = this.slots;
    const capped = slots && (await this.gateAfterClaim(claim, executes, () => slots.afterClaim(executes)));
    if (capped?.run === false) {
      // No slot for this attempt: it is settled as never started, then its window shares go back and the line wakes.
      return await notRunUnderLimit(this, claim, capped, async () => {
        await this.limited?.neverStarted();
        await wakeWaiters(this.scope, capped.wake);
      });
    }
    if (!executes || claim.fence === undefined) return await this.decided(claim);
    try {
      return await this.decided(claim);
    } finally {
      await this.limited?.settled();
      if (this.slots !== undefined) await capsEnded(this, this.slots, this.completed);
    }
  }

  /** The decision acted on, once any gate let the call through. */
  private decided(claim: CallClaim): ToolResultBlock | Promise<ToolResultBlock> {
    const { runtime, call, facts } = this;
    const decision = claim.decision;
    if (decision.kind === 'execute' && claim.toolRemoval !== undefined) {
      // Removed for the run: the claim created and took over nothing, so there is nothing to settle.
      facts.answered('reject', 'rejected');
      return block(call, 'rejected', { content: `${claim.toolRemoval} ${REJECTION_REMOVAL_SUFFIX}`, is_error: true });
    }
    // Plain fields, not conditional spreads: this object is built on every claimed call.
    facts.decided({
      decision: decision.kind,
      attempt: claim.attempt,
      receiptKey: claim.redisKey,
      reason: decision.kind === 'ambiguous' ? decision.reason : undefined,
      reconciled: claim.reconciled,
      keyedRerun: claim.keyedRerun,
    });
    switch (decision.kind) {
      case 'replay':
        if (claim.failure !== undefined) return failureStands(this, claim.failure);
        facts.answered('replay', 'replayed');
        return block(call, 'replayed', recordedResult(claim.result));
      case 'wait':
        return this.waitForLiveAttempt(claim);
      case 'ambiguous':
        return ambiguousOutcome(runtime.onAmbiguous, call, facts, decision.reason);
      case 'execute':
        // An execute decision without a removal always comes with the fence of the attempt the claim started.
        if (!claim.fence) throw new UnexpectedScriptReplyError('claim', { redisKey: claim.redisKey, decision });
        this.fence = claim.fence;
        this.attempt = claim.fence.attempt;
        return this.execute();
    }
  }

  /** Another attempt holds a live lease: the job is parked to come back once it would lapse, or sooner. */
  private async waitForLiveAttempt(claim: CallClaim): Promise<never> {
    const { runtime, scope, call, facts } = this;
    // Come back when the lease would lapse, or sooner: the live attempt usually finishes long before.
    const remaining = claim.leaseRemainingMs ?? runtime.keyspace.settings.leaseMs;
    // The park itself never lasts less than PARKED_DELIVERY_UNWIND_MS; floored here too so the delay reported is the park's.
    const delay = Math.max(
      Math.min(remaining, runtime.maxWaitMs) + Math.floor(Math.random() * runtime.waitJitterMs),
      PARKED_DELIVERY_UNWIND_MS,
    );
    // A job cancelled meanwhile is not parked to come back: it stops here.
    if (scope.abort.aborted) throwIfInterrupted(scope.job.id ?? '', scope.abort);
    facts.answered('wait', 'waited');
    facts.waiting(delay);
    await scope.park(claim.serverNowMs ?? Date.now(), delay);
    throw new DelayedError(`tool call ${call.id} waits ${delay} ms for a live attempt to finish`);
  }

  /**
   * Runs the tool under the attempt's lease (heartbeats) and its own abort,
   * then completes the receipt, or settles what the tool threw. The abort
   * fires on the job's abort or the first fence refusal, whichever comes
   * first: nothing is settled after it. Its AbortController is made only if
   * the tool reads `ctx.signal`.
   */
  private async execute(): Promise<ToolResultBlock> {
    const { runtime, scope, call, tool, key, attempt, fence, facts } = this;
    const abort = new LazyAbort(scope.abort);
    const watch = new FenceWatch(facts, attempt, abort);
    const recordedSteps = attempt > 1 && tool.effect === 'resumable' ? await runtime.keyspace.receipts.steps(key) : NO_STEPS;
    const ctx = new ExecutionContext({
      receipt: { store: runtime.keyspace.receipts, fence },
      attempt,
      key,
      abort,
      tenantId: scope.data.tenantId,
      runId: scope.data.runId,
      sessionId: scope.data.sessionId,
      callId: call.id,
      job: scope.job,
      logger: facts,
      recordedSteps,
      watch,
    });
    const slots = this.slots;
    // A slot of an in-flight cap is renewed with each heartbeat; one no longer held surely stops the tool.
    const renewSlots = slots && (async () => void ((await slots.renew()) || abort.abort(new CapSlotLostError(call.id))));
    const keeper = new LeaseKeeper(
      runtime.keyspace.receipts,
      key,
      fence,
      runtime.keyspace.settings.leaseMs,
      facts,
      watch,
      renewSlots,
    ).start();

    let value: unknown;
    let replayed = false;
    try {
      value = await facts.runTool(async () => {
        if (tool.effect !== 'transactional') return tool.execute(this.args, ctx);
        // The tool's writes commit with the outcome row before the receipt completes below.
        const done = await runTransactionalAttempt(this, ctx, () => keeper.confirm());
        replayed = done.replayed;
        return done.value;
      });
    } catch (error) {
      keeper.stop(); // before any await below: an abandoned lease must not be extended meanwhile
      if (watch.during) throw fencedOutFailure(this, watch.during, error);
      return await this.fail(error, watch);
    } finally {
      keeper.stop();
      abort.dispose();
    }
    if (watch.during) throw fencedOutFailure(this, watch.during);
    return await this.complete(value, replayed, watch);
  }

  /**
   * Completes the receipt with the shaped result; when the next call of the
   * turn may be claimed ahead, the same script claims it and its answer is
   * kept for that call. A transactional attempt that lost the race to
   * another attempt's commit replays the winner's result.
   */
  private async complete(value: unknown, replayed: boolean, watch: FenceWatch): Promise<ToolResultBlock> {
    const { runtime, key, fence, facts, attempt } = this;
    const shaping = runtime.shape(value, this.call, this.tool, this.scope.data);
    const result = shaping instanceof Promise ? await shaping : shaping;
    const next = this.links.next;
    let settled: SettleResult;
    try {
      const carried = next?.claimToCarry();
      if (next === undefined || carried === undefined) {
        settled = await facts.roundTrip('complete', () => runtime.keyspace.receipts.complete(key, fence, result));
      } else {
        const both = await facts.roundTrip('completeAndClaim', () =>
          runtime.keyspace.receipts.completeAndClaim(key, fence, result, carried),
        );
        next.carried(both.ahead);
        settled = both.settled;
      }
    } catch (error) {
      if (!(error instanceof FencedOutError)) throw error;
      watch.fencedOut('complete', error);
      throw fencedOutFailure(this, 'complete', error);
    }
    this.completed = true;
    facts.lateSettleOf(settled, 'executed', attempt);
    facts.settled('executed', undefined, attempt);
    const outcome = replayed ? 'replayed' : 'executed';
    facts.answered('execute', outcome, attempt);
    return block(this.call, outcome, result);
  }

  /** What the tool threw, settled (see `../outcomes/failure.ts` for each branch). */
  private async fail(error: unknown, watch: FenceWatch): Promise<ToolResultBlock> {
    const { scope } = this;
    const onFencedOut = (fenced: FencedOutError) => watch.fencedOut('fail', fenced);
    if (scope.abort.aborted) {
      // Cancelled, or the lock lost: the job ends with that, whatever the tool threw. The receipt is settled
      // as the tool reports: nothing ran (NeverStartedError), the outcome is unknown (OutcomeUnknownError),
      // or, for any other error (which proves nothing), it is left for its lease to lapse.
      if (error instanceof NeverStartedError) return await settleInterrupted(this, error, onFencedOut);
      if (error instanceof OutcomeUnknownError) {
        // Left as a crash would leave it, at once (fenced: an attempt that was taken over writes nothing).
        await this.runtime.keyspace.receipts.markOutcomeUnknown(this.key, this.fence, error.message).catch(() => undefined);
        this.facts.outcomeUnknown(error);
        throw interruptionOf(scope.job.id ?? '', scope.abort) ?? error;
      }
      // First learn whether another attempt already took the call over.
      const takenOver = await takeoverOf(this);
      if (!takenOver) throw abandoned(this, scope.abort.reason, error);
      watch.fencedOut('abort', takenOver);
      throw interruptionOf(scope.job.id ?? '', scope.abort) ?? fencedOutFailure(this, 'abort', error);
    }
    // Redis did not answer, or a write went unacknowledged: not the tool's failure (see infrastructureFailure).
    if (isInfrastructureError(error)) return await infrastructureFailure(this, error);
    if (error instanceof OutcomeUnknownError) return await outcomeUnknown(this, error, onFencedOut);
    return await settleFailure(this, error, onFencedOut);
  }
}

/**
 * The result a completed receipt holds, as a tool_result. Receipts the
 * wrapper completed hold a {@link RecordedToolResult}; one an operator
 * resolved may hold any JSON value, or none.
 */
function recordedResult(stored: unknown): RecordedToolResult {
  if (typeof stored === 'object' && stored !== null && typeof (stored as RecordedToolResult).content === 'string') {
    return stored as RecordedToolResult;
  }
  if (stored === undefined) return { content: 'This call already completed (settled by an operator); no result was recorded.' };
  return { content: stringifyToolResult(stored) };
}
