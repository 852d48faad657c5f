/**
 * Claims made ahead of a call, so a turn costs fewer round trips: the next
 * call of a sequential stretch claimed by the current call's complete
 * ({@link NextCall}), and the calls of a side-by-side group claimed together
 * ({@link ClaimGroup}). Off the path a reader follows: a call takes such a
 * claim through `claimedAhead`, and decides from it as from its own.
 */
import type { ToolCallReceiptKey } from '../../core/identity.js';
import type { ToolCall } from '../../core/job-data.js';
import type { ClaimOptions, PrefetchedClaim } from '../../redis/receipts/store.js';
import type { CallObservation } from '../call/facts.js';
import type { CallRuntime, CarriedCall, JobScope } from '../runtime.js';
import { stageCall, type StagedCall } from '../tools/input.js';

/**
 * The call that runs after the current one in a sequential stretch of a
 * turn: staged at most once, and possibly claimed by the current call's
 * complete. The turn hands it to both calls, and releases it when the job
 * stops before the call runs.
 *
 * In a turn whose calls run one after another, the complete of one call can
 * claim the next in the same script (`ReceiptStore.completeAndClaim`), so a
 * k-call turn costs about k + 1 round trips instead of 2k. The next call is
 * claimed ahead only when a claim of its own would be made now: it names a
 * known tool, its input prepared without a rejection, its tool takes a
 * receipt (not read-only), and the job is not interrupted. The claim's
 * answer is handed to that call, which decides from it exactly as from a
 * claim of its own.
 */
export class NextCall implements CarriedCall {
  private staging: Promise<StagedCall> | undefined;
  /** The call staged, once its staging has finished. */
  private staged: StagedCall | undefined;
  private claimed: PrefetchedClaim | undefined;
  private group: ClaimGroup | undefined;

  constructor(
    private readonly runtime: CallRuntime,
    private readonly scope: JobScope,
    readonly call: ToolCall,
  ) {}

  /** The call staged; staged on first use only, so a call is prepared once. */
  stage(): Promise<StagedCall> {
    return (this.staging ??= this.startStaging());
  }

  /**
   * Stages the call now: at once when its input parses as sent (then
   * {@link staged} is known before this returns), else once its repair or
   * digest is done. Always a promise: a staging that throws is kept as a
   * rejection, met by the call when it runs (marked handled meanwhile).
   */
  private startStaging(): Promise<StagedCall> {
    let staging: StagedCall | Promise<StagedCall>;
    try {
      staging = stageCall(this.runtime, this.scope, this.call);
    } catch (error) {
      staging = Promise.reject(error);
    }
    if (!(staging instanceof Promise)) {
      this.staged = staging;
      return Promise.resolve(staging);
    }
    const later = staging.then((staged) => (this.staged = staged));
    later.catch(() => undefined);
    return later;
  }

  /**
   * The claim to carry in the current call's complete, or `undefined` when
   * this call must not be claimed ahead (it takes no claim, its staging
   * threw or has not finished, or the job was interrupted: a job that lost
   * its lock or was cancelled claims nothing more). Never waits: the current
   * call's lease is no longer renewed once its tool has returned, so its
   * complete must not wait for this call's repair (which may ask a model)
   * or digest; such a call takes its own claim when it runs.
   */
  claimToCarry(): { readonly key: ToolCallReceiptKey; readonly options: ClaimOptions } | undefined {
    void this.stage();
    // A staging that threw leaves nothing staged: the call meets the same error (the staging is kept) when it
    // runs, as it would have without a claim carried for it.
    const staged = this.staged;
    if (staged === undefined) return undefined;
    if (staged.kind !== 'ready' || this.runtime.runsWithoutReceipt(staged.tool) || this.scope.abort.aborted) return undefined;
    // A call a limit counts reserves its share before its claim, so it claims for itself.
    if (this.runtime.limits?.covers(staged.tool.name)) return undefined;
    // A call of a tool with an approval rule passes its gate before any claim.
    if (this.runtime.approvals?.of(staged.tool)) return undefined;
    return { key: staged.key, options: this.runtime.claimOptions(staged.tool, this.scope) };
  }

  /** Makes this call take its claim from its side-by-side group's. */
  joinGroup(group: ClaimGroup): void {
    this.group = group;
  }

  /** Keeps what the current call's complete (or its group's claim) claimed for this call. */
  carried(ahead: PrefetchedClaim | null): void {
    this.claimed = ahead ?? undefined;
  }

  /**
   * The claim made ahead for this call, handed over once. A call of a
   * side-by-side group waits for the group's claim; the first of the group to
   * ask sends it, as a round trip of its own observation.
   */
  async claimedAhead(obs: CallObservation): Promise<PrefetchedClaim | undefined> {
    const group = this.group;
    if (group !== undefined) {
      if (group.sent) await group.claim();
      else await obs.roundTrip('claimGroup', () => group.claim());
    }
    return this.takeClaim();
  }

  /** The claim made ahead for this call, handed over once. */
  private takeClaim(): PrefetchedClaim | undefined {
    const ahead = this.claimed;
    this.claimed = undefined;
    return ahead;
  }

  /**
   * The job stops before this call runs. An attempt claimed ahead for it
   * never started its effect: settle it as failed `neverStarted`, so the
   * next delivery runs the call as its next attempt instead of finding an
   * attempt that lost its lease (ambiguous, for an opaque tool). Never throws:
   * a settle that cannot be written leaves the lease to lapse, as for any
   * interrupted attempt.
   */
  async release(why: string): Promise<void> {
    const ahead = this.takeClaim();
    if (!ahead?.fence) return;
    await this.runtime.keyspace.receipts.fail(ahead.key, ahead.fence, { error: why, tier: 'neverStarted' }).catch(() => undefined);
  }
}

/**
 * Calls of a side-by-side group claimed together: one `claim-group-N.lua`
 * round trip, sent by the first of them to reach its claim, answers each.
 */
export class ClaimGroup {
  private sending: Promise<void> | undefined;

  constructor(
    private readonly runtime: CallRuntime,
    private readonly members: readonly {
      readonly call: NextCall;
      readonly claim: { readonly key: ToolCallReceiptKey; readonly options: ClaimOptions };
    }[],
  ) {}

  get sent(): boolean {
    return this.sending !== undefined;
  }

  claim(): Promise<void> {
    this.sending ??= this.runtime.keyspace.receipts.claimGroup(this.members.map((m) => m.claim)).then((answers) => {
      for (const [i, answer] of answers.entries()) this.members[i]!.call.carried(answer);
    });
    return this.sending;
  }

  /**
   * Stages `calls` (a side-by-side group, each staged once) and, when two or
   * more of them would claim now, makes them claim together.
   */
  static async form(runtime: CallRuntime, calls: readonly NextCall[]): Promise<void> {
    // No call's lease runs yet: the group may wait for its members' staging (a repair, a digest).
    await Promise.all(calls.map((call) => call.stage().catch(() => undefined)));
    const claims = calls.map((call) => call.claimToCarry());
    const members = calls.flatMap((call, i) => (claims[i] === undefined ? [] : [{ call, claim: claims[i] }]));
    if (members.length < 2) return;
    const group = new ClaimGroup(runtime, members);
    for (const member of members) member.call.joinGroup(group);
  }
}
