/**
 * The limits of one worker as its call path meets them: which limits count
 * a tool's calls, and {@link limitCall}, the one gate a call passes: reserve
 * before the claim, bind (and commit) when the claim executes, give back on
 * everything else. docs/limits.md says what is counted and why.
 * Over 300 lines: one call's shares from its reserve to its settle, each
 * step beside the others it must agree with (bind, give-back, commit).
 */
import { performance } from 'node:perf_hooks';
import type { ToolCallReceiptKey } from '../core/identity.js';
import type { AttemptFence } from '../redis/errors.js';
import { receiptRedisKey } from '../redis/keys.js';
import { costOf, LimitCostError, type Limit } from './definitions.js';
import type { WorkerLimits } from './worker-limits.js';
import type { BindResult, LimitReservation, ReserveResult } from './answers.js';
import type { LimitStore } from './limit-store.js';
import { limitRefusalText } from './window.js';

export { WorkerLimits, type ToolLimits } from './worker-limits.js';

/** Why a call is not run under its limits, and what it does instead. */
export interface LimitRefusal {
  /** `refuse`: the model reads {@link text}; `wait`: the job waits until {@link retryAtMs}. */
  readonly onLimit: 'refuse' | 'wait';
  /** The limit that decided it. */
  readonly limit: string;
  /** The sentence the model reads (names the limit, and when it resets). */
  readonly text: string;
  /** For `wait`: when the window allows it, on the limit's server clock; and that clock's now. */
  readonly retryAtMs: number;
  readonly nowMs: number;
}

/** What {@link LimitedCall.afterClaim} says of an executing attempt. */
export type LimitVerdict =
  | { readonly run: true }
  /**
   * Not to run: the attempt is to be settled as never started, its shares then given back
   * ({@link LimitedCall.neverStarted}), and the call refused or parked.
   */
  | { readonly run: false; readonly refusal: LimitRefusal }
  /**
   * Not to run: a reservation was revoked (the claim came after its deadline); settle as never started,
   * give back ({@link LimitedCall.neverStarted}) and ask again.
   */
  | { readonly run: false; readonly revoked: true };

/**
 * One call's reservations, from its reserve to its settle. A reservation may
 * be held by more than this delivery (a redelivery of the same call reuses
 * the receipt's pending one), so one this call does not bind is never given
 * back blindly: {@link LimitStore.settle} decides on the run's side, and
 * keeps a share an attempt of the receipt was bound to, or is running
 * without. Every give-back here is best effort: one that fails leaves the
 * reservation pending, and the next settle of its limit finishes it (bound
 * ones are committed, the others given back), so no failure here can make
 * a count wrong.
 */
export class LimitedCall {
  private bound: LimitReservation[] = [];
  /** Held for an attempt that will not run, never bound to it: given back by {@link neverStarted} as {@link bound} is. */
  private unbound: readonly LimitReservation[] = [];
  /** The attempt {@link bound} was bound to: a give-back names it, so one after a later attempt took over changes nothing. */
  private boundFor: AttemptFence | undefined;
  private commits: Promise<unknown> = Promise.resolve();
  /** Counted by an earlier delivery's bind, of a kind committed when the attempt ends. */
  private countedAtEnd: LimitReservation[] = [];
  /** The binds sent beside the claim ({@link bindBeside}): the epoch they name, and their answers, in `granted`'s order. */
  private beside: { readonly epoch: string; readonly answers: Promise<PromiseSettledResult<BindResult>[]> } | undefined;

  constructor(
    private readonly store: LimitStore,
    private readonly receiptKey: string,
    private readonly granted: readonly LimitReservation[],
    /** Set when a limit refused but the call still goes to its claim (it may replay, wait, or be counted already). */
    readonly refusal: LimitRefusal | undefined,
    private readonly refusedLimits: readonly string[],
    /** When the reserves were sent, on this process's monotonic clock (see {@link afterClaim}). */
    private readonly reservedAtMs = performance.now(),
  ) {}

  /** Whether the binds may go beside the claim: a call no limit refused (one that was reads its receipt before it binds). */
  get bindsBesideClaim(): boolean {
    return this.refusal === undefined && this.granted.length > 0 && this.beside === undefined;
  }

  /**
   * Sends each reservation's bind right after the claim, before its answer,
   * conditioned on the epoch that claim mints: Redis binds only the attempt
   * that very claim creates, so a fresh call pays no round trip for its
   * binds. Whatever else the claim finds (a takeover, a replay, a wait) the
   * binds write nothing, and {@link afterClaim} binds as it would have.
   */
  bindBeside(epoch: string): void {
    if (this.beside !== undefined) return;
    this.beside = { epoch, answers: Promise.allSettled(this.granted.map((r) => this.store.bind(r, epoch))) };
  }

  /**
   * The answers of the binds sent beside the claim, awaited (so nothing of
   * them is in flight when a reservation is bound or settled after): those
   * that bound or refused for the attempt `fence` holds, when the claim
   * that created it is the one they were sent with; else none.
   */
  private async besideAnswers(fence: AttemptFence | undefined): Promise<(BindResult | undefined)[] | undefined> {
    const beside = this.beside;
    if (beside === undefined) return undefined;
    const answers = await beside.answers;
    if (fence === undefined || fence.attempt !== 1 || fence.epoch !== beside.epoch) return undefined;
    const failed = answers.find((a) => a.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    // 'not_running': this bind ran before the claim's write (a script the server had to load again): bind again.
    return answers.map((a) => (a.status === 'fulfilled' && a.value.kind !== 'not_running' ? a.value : undefined));
  }

  /**
   * After the claim. Anything but an execution (a replay, a wait, an
   * ambiguous call, a tool removed) gives every reservation back and
   * answers `run`. An execution binds each to the attempt (`fence`; the
   * binds sent beside the claim answer for an attempt it created) and
   * commits it: a takeover, or a rerun of a call counted already, finds the
   * receipt's lifetime counted (`counted`) and gives its own back. A limit
   * that had refused lets the attempt run only when it counted this
   * lifetime already. A bind answered longer after the reserves were sent
   * than the run's bindings are kept is not trusted: revoked.
   */
  async afterClaim(executes: boolean, fence?: AttemptFence): Promise<LimitVerdict> {
    if (!executes) {
      // The release awaits the binds sent beside the claim: they wrote nothing for an attempt that does not run.
      await this.release();
      return { run: true };
    }
    const beside = await this.besideAnswers(fence);
    if (this.refusal !== undefined) {
      const { bound } = await this.store.boundOn(this.receiptKey, this.refusedLimits);
      if (!this.refusedLimits.every((name) => bound.has(name))) {
        // This attempt will not run: what it holds goes back without being bound to it (a settle would count it),
        // once its receipt says so (neverStarted). Named for this attempt: a reused share an earlier attempt was
        // bound to stays, counting that attempt.
        this.unbound = this.granted;
        this.boundFor = fence;
        return { run: false, refusal: this.refusal };
      }
    }
    const binds = await Promise.all(this.granted.map(async (r, i) => ({ r, answer: beside?.[i] ?? (await this.store.bind(r)) })));
    this.bound = binds.filter((b) => b.answer.kind === 'bound').map((b) => b.r);
    this.boundFor = fence;
    // Counted by this very reservation: an earlier delivery of the call bound it to the attempt this one took over
    // (which may have run, and died before its commit), so it is committed, and neither owned nor given back here:
    // a takeover that never starts must not take back the count of the execution before it.
    const countedBySelf = binds.filter((b) => b.answer.kind === 'counted' && b.answer.by === b.r.id).map((b) => b.r);
    // Revoked (by a settle, or by the bind that found the lifetime counted by another): nobody can bind it again.
    const revoked = binds.filter((b) => b.answer.kind === 'revoked' || (b.answer.kind === 'counted' && b.answer.by !== b.r.id));
    const notRunning = binds.filter((b) => b.answer.kind === 'not_running').map((b) => b.r);
    const putBack = () => [
      ...revoked.map(({ r }) => this.store.release(r).catch(() => undefined)),
      ...notRunning.map((r) => this.store.settle(r).catch(() => undefined)),
    ];
    // A settle's revocation of a reservation is kept as long as its run's bindings are (two windows and the bound
    // after it): a bind answered later than that after its reserve (a process paused between the two) may have
    // found the revocation gone, and bound a share that was given back. Its answer is not trusted: the attempt does
    // not run under it (it goes back as never started), and asks again.
    const stale = this.bound.length > 0 && performance.now() - this.reservedAtMs >= Math.min(...this.bound.map((r) => r.bindingsKeepMs));
    if (stale || binds.some((b) => b.answer.kind === 'revoked')) {
      // What it bound goes back once its receipt says it never started (neverStarted); the rest at once.
      this.commits = Promise.all([...putBack(), ...countedBySelf.map((r) => this.store.commit(r).catch(() => undefined))]);
      return { run: false, revoked: true };
    }
    // A fixed window's share is committed while the tool runs: a commit lost here is finished by the next settle
    // (the reservation is bound). A sliding window's or a bucket's counts from its commit, which must not come
    // before the execution it counts: those are committed when the attempt ends (settled), and meanwhile count as
    // pending, that is as taken now.
    this.countedAtEnd = countedBySelf.filter(committedAtEnd);
    this.commits = Promise.all([
      ...[...this.bound, ...countedBySelf].filter((r) => !committedAtEnd(r)).map((r) => this.store.commit(r).catch(() => undefined)),
      ...putBack(),
    ]);
    return { run: true };
  }

  /**
   * The attempt never started: its shares go back (unbound on the receipt,
   * then released), committed or not, unless the receipt has moved on to a
   * later attempt meanwhile (a redelivery took the failed attempt over
   * between its settle and this give-back): that attempt is counted by
   * them. Called once the receipt is settled as never started, never
   * before: a worker that dies between the two then leaves a settled
   * attempt still counted (the next bind finds it so), not a running one
   * that nothing counts. After a verdict of `run: false`, this is what
   * gives back the shares {@link afterClaim} kept.
   */
  async neverStarted(): Promise<void> {
    await this.commits;
    const held = [...this.bound, ...this.unbound];
    this.bound = [];
    this.unbound = [];
    await Promise.all(held.map((r) => this.store.giveBack(r, this.boundFor).catch(() => undefined)));
  }

  /**
   * Settles what this delivery will not bind (the claim failed, or decided
   * anything but an execution): see {@link LimitStore.settle}. A share a
   * bind beside a lost claim bound stays counted: the attempt it was bound
   * to may run on a later delivery, counted by it.
   */
  async release(): Promise<void> {
    await this.beside?.answers;
    await Promise.all(this.granted.map((r) => this.store.settle(r).catch(() => undefined)));
  }

  /**
   * The attempt ended (after its receipt was settled, whatever it settled as):
   * commits what counts from the attempt's end (a sliding window's or a
   * bucket's shares not given back), and waits for the commits started at
   * the bind, so a job does not end with writes in flight.
   */
  async settled(): Promise<void> {
    await this.commits;
    const atEnd = [...this.bound.filter(committedAtEnd), ...this.countedAtEnd];
    this.countedAtEnd = [];
    await Promise.all(atEnd.map((r) => this.store.commit(r).catch(() => undefined)));
  }
}

/** Whether a reservation is committed when its attempt ends (a sliding window or a bucket) rather than at its bind. */
const committedAtEnd = (reservation: LimitReservation): boolean => reservation.kind !== 'fixed';

/** What {@link limitCall} answers. */
export type LimitGate =
  /** No limit counts this call (none covers the tool, or each costs it 0). */
  | { readonly kind: 'free' }
  /** Not run, not claimed: a limit refused, and the receipt has nothing to replay or wait for. */
  | { readonly kind: 'refused'; readonly refusal: LimitRefusal }
  /** The limit's cost function failed for these arguments: not run, not claimed. */
  | { readonly kind: 'invalid_cost'; readonly error: LimitCostError }
  /** Go on to the claim, then tell {@link LimitedCall.afterClaim} what it decided. */
  | { readonly kind: 'claim'; readonly call: LimitedCall };

/** The refusal of the limits that refused, the first `refuse` (or never-fitting) one first; else the latest wait. */
function refusalOf(refused: readonly { limit: Limit; amount: number; answer: Extract<ReserveResult, { granted: false }> }[]): LimitRefusal {
  const facts = refused.map(({ limit, amount, answer }) => ({
    onLimit: answer.why === 'exceeds_max' ? ('refuse' as const) : limit.onLimit,
    limit: limit.name,
    text: limitRefusalText({
      ...limit,
      limit: limit.name,
      amount,
      why: answer.why,
      // A fixed window names its reset; the other kinds when the call may fit.
      resetsAtMs: limit.kind === 'fixed' || answer.retryAtMs === null ? answer.usage.resetsAtMs : answer.retryAtMs,
      ...(answer.why === 'held' && answer.retryAtMs !== null ? { freesAtMs: answer.retryAtMs } : {}),
    }),
    retryAtMs: answer.retryAtMs ?? answer.usage.resetsAtMs,
    nowMs: answer.usage.nowMs,
  }));
  const refusing = facts.find((f) => f.onLimit === 'refuse');
  return refusing ?? facts.reduce((a, b) => (b.retryAtMs > a.retryAtMs ? b : a));
}

/**
 * The gate a call passes before its claim: reserves its share of each limit
 * that counts it (side by side; each limit is one script on its own slot).
 * All granted: go on to the claim. One refused: the others are given back,
 * and the receipt is read, since a call over its limit still replays a
 * recorded result, waits for a live attempt, and runs when this lifetime is
 * counted already; only a call with none of those is refused here.
 */
export async function limitCall(limits: WorkerLimits | undefined, key: ToolCallReceiptKey, args: unknown): Promise<LimitGate> {
  const covering = limits?.of(key.toolName) ?? [];
  if (limits === undefined || covering.length === 0) return { kind: 'free' };
  const store = limits.store;
  let amounts: number[];
  try {
    amounts = covering.map((limit) => costOf(limit, args));
  } catch (error) {
    if (error instanceof LimitCostError) return { kind: 'invalid_cost', error };
    throw error;
  }
  // A call costing 0 of a budget is not counted by it.
  const counted = covering.flatMap((limit, i) => (amounts[i]! > 0 ? [{ limit, amount: amounts[i]! }] : []));
  if (counted.length === 0) return { kind: 'free' };
  const reservedAtMs = performance.now();
  const answers = await Promise.allSettled(counted.map(({ limit, amount }) => store.reserve(limit, key, amount)));
  const granted = answers.flatMap((a) => (a.status === 'fulfilled' && a.value.granted ? [a.value.reservation] : []));
  const failed = answers.find((a) => a.status === 'rejected');
  const receiptKey = receiptRedisKey(store.prefix, key);
  const call = (refusal?: LimitRefusal, refused: string[] = []) =>
    new LimitedCall(store, receiptKey, granted, refusal, refused, reservedAtMs);
  if (failed !== undefined) {
    await call().release();
    throw failed.reason;
  }
  const refused = counted.flatMap(({ limit, amount }, i) => {
    const answer = (answers[i] as PromiseFulfilledResult<ReserveResult>).value;
    return answer.granted ? [] : [{ limit, amount, answer }];
  });
  if (refused.length === 0) return { kind: 'claim', call: call() };
  const refusal = refusalOf(refused);
  const names = refused.map((r) => r.limit.name);
  const view = await store.boundOn(receiptKey, names).catch(async (error: unknown) => {
    await call().release();
    throw error;
  });
  const countedAlready = names.every((name) => view.bound.has(name));
  if (countedAlready || view.status === 'completed' || view.status === 'running') {
    return { kind: 'claim', call: call(refusal, names) };
  }
  await call().release();
  return { kind: 'refused', refusal };
}
