/**
 * One call's slots of the in-flight caps that cover its tool, as its call
 * path meets them: {@link capCall}, the gate before the claim (a slot each,
 * or refused, or parked in line), then {@link HeldSlots}: adopted when the
 * claim executes, renewed with the attempt's heartbeats, freed at the settle
 * (naming the jobs to wake). docs/limits.md (in-flight caps) says what holds.
 */
import { randomToken } from '../redis/receipts/transitions/claim.js';
import { performance } from 'node:perf_hooks';
import type { ToolCallReceiptKey } from '../core/identity.js';
import type { InFlightCap } from './caps.js';
import type { CapStore, SlotAnswer, SlotRequest } from './cap-store.js';
import type { LimitRefusal } from './call-limits.js';
import type { LimitStore } from './limit-store.js';
import { durationText } from './window.js';
import type { WorkerLimits } from './worker-limits.js';

/** How a call asks for its slots: the receipt lease its slots share, and the job to wake when its turn comes. */
export interface SlotOptions {
  /** The lease of a slot, in ms: the receipt's, renewed with the same heartbeats. */
  readonly leaseMs: number;
  /** The job to wake when the call's turn in line comes (opaque here; `''` for none). */
  readonly waker: string;
  /**
   * Wakes the jobs whose turn came when the call's slots are freed where no
   * answer names them: on the way to an error (Redis did not answer, a key
   * is corrupt), and after a claim that does not execute (a replay, a wait,
   * an ambiguous call, a removed tool).
   */
  readonly wake?: (jobs: readonly string[]) => Promise<void>;
}

/** What {@link capCall} answers. */
export type CapGate =
  /** No cap covers the call's tool. */
  | { readonly kind: 'free' }
  /** Every slot of a cap is taken: refused, or (`wait`) parked with its place in line kept; `wake`: jobs whose turn came meanwhile. */
  | { readonly kind: 'refused'; readonly refusal: LimitRefusal; readonly wake: readonly string[] }
  /** Go on to the claim, then tell {@link HeldSlots.afterClaim} what it decided. */
  | { readonly kind: 'claim'; readonly slots: HeldSlots };

/** Whether an acquire kept the call a place in its cap's line: a full cap that waits does. */
const keptPlace = (request: SlotRequest, answer: PromiseSettledResult<SlotAnswer>): boolean =>
  answer.status === 'fulfilled' && answer.value.kind === 'full' && request.cap.onLimit === 'wait';

/** How long a place in line is kept without its call asking again: a few leases, past any park of a waiting job. */
const placeMsOf = (leaseMs: number) => 4 * leaseMs;

/** The sentence a call over an in-flight cap reads, or the wait it is parked for. */
function capRefusal(cap: InFlightCap, answer: Extract<SlotAnswer, { kind: 'full' }>, leaseMs: number): LimitRefusal {
  const whose = cap.per === 'global' ? '' : ` per ${cap.per}`;
  // Parked no longer than a lease: a slot frees by then at the latest, and the releaser wakes it sooner.
  const retryAtMs = Math.min(answer.retryAtMs, answer.nowMs + leaseMs);
  const within = durationText(Math.max(0, answer.retryAtMs - answer.nowMs));
  const taken =
    answer.held < cap.concurrency
      ? `keeps its free slots for calls that asked before this one; it may ask again within ${within}`
      : `has every slot taken; one frees within ${within} at the latest`;
  return {
    onLimit: cap.onLimit,
    limit: cap.name,
    text: `This call was not run: the in-flight cap "${cap.name}" (at most ${cap.concurrency} at once${whose}) ${taken}.`,
    retryAtMs,
    nowMs: answer.nowMs,
  };
}

/**
 * The gate a call passes before its claim: a slot of each cap covering its
 * tool, side by side. All granted (or held by another delivery of the same
 * call): go on to the claim. One full: the others are freed, and the
 * receipt is read, since a call whose receipt is completed replays and one
 * with a live attempt waits for it whatever the cap; only a call with
 * neither is refused or parked here (with `wait`, its place in line kept).
 */
export async function capCall(
  limits: WorkerLimits | undefined,
  key: ToolCallReceiptKey,
  receiptKey: string,
  options: SlotOptions,
): Promise<CapGate> {
  const caps = limits?.capsOf(key.toolName) ?? [];
  if (limits === undefined || caps.length === 0) return { kind: 'free' };
  const store = limits.store.caps;
  const token = randomToken();
  const requests = caps.map((cap) => ({ cap, keys: store.keysOf(cap, key), receiptKey, token }));
  const askedAtMs = performance.now();
  const placeMs = placeMsOf(options.leaseMs);
  const answers = await Promise.allSettled(
    requests.map((request) => store.acquire(request, { leaseMs: options.leaseMs, placeMs, waker: options.waker, adopt: false })),
  );
  const slots = requests.map((request, i) => {
    const answer = answers[i]!;
    const granted = answer.status === 'fulfilled' && answer.value.kind === 'granted';
    return { request, own: granted, placed: keptPlace(request, answer) };
  });
  const held = new HeldSlots(limits.store, receiptKey, slots, options, askedAtMs);
  const failed = answers.find((a) => a.status === 'rejected');
  if (failed !== undefined) throw await held.releasedFor(failed.reason);
  const full = answers.flatMap((a, i) => (a.status === 'fulfilled' && a.value.kind === 'full' ? [{ cap: caps[i]!, answer: a.value }] : []));
  if (full.length === 0) return { kind: 'claim', slots: held };
  const refusals = full.map(({ cap, answer }) => capRefusal(cap, answer, options.leaseMs));
  const refusal = refusals.find((r) => r.onLimit === 'refuse') ?? refusals.reduce((a, b) => (b.retryAtMs > a.retryAtMs ? b : a));
  const { status } = await limits.store.boundOn(receiptKey, []).catch(async (error: unknown) => {
    throw await held.releasedFor(error);
  });
  if (status === 'completed' || status === 'running') return { kind: 'claim', slots: held.refusedWith(refusal) };
  // Parked to come back (a cap that waits): its places in line are kept; refused for good, it gives them up.
  const wake = await held.release(refusal.onLimit === 'wait');
  return { kind: 'refused', refusal, wake };
}

/**
 * One call's slots, from its gate to its settle. A slot is the call's
 * receipt with this delivery's token: `own` ones this delivery holds and
 * renews and frees; the others (another delivery of the call holds it, or
 * none was free) it adopts or takes when its claim executes, and otherwise
 * leaves alone. Every free here is best effort: a slot not freed lapses
 * with its lease.
 */
export class HeldSlots {
  private refusal: LimitRefusal | undefined;
  /** Until when (this process's monotonic clock) every own slot is surely held: its lease, counted from before it was asked. */
  private heldUntil: number;

  constructor(
    private readonly limits: LimitStore,
    /** The call's receipt, whose settle frees the slots. */
    private readonly receiptKey: string,
    /** `placed`: a cap that waits kept the call a place in its line, which a call that will not come back gives up. */
    private readonly slots: { readonly request: SlotRequest; own: boolean; placed: boolean }[],
    private readonly options: SlotOptions,
    askedAtMs: number,
  ) {
    this.heldUntil = askedAtMs + options.leaseMs;
  }

  private get leaseMs(): number {
    return this.options.leaseMs;
  }

  private get store(): CapStore {
    return this.limits.caps;
  }

  /** Marks the slots as asked for by a call some cap refused, which still goes to its claim (it may replay or wait). */
  refusedWith(refusal: LimitRefusal): this {
    this.refusal = refusal;
    return this;
  }

  /**
   * After the claim. Anything but an execution frees what this delivery
   * holds and answers `run`. An execution adopts each slot it does not hold
   * (its receipt's, held by an earlier delivery, becomes its own) or takes a
   * free one; when a cap has none free for it, what it holds is freed and
   * the attempt is not to run (settled as never started, then refused or
   * parked as the cap says).
   */
  async afterClaim(
    executes: boolean,
  ): Promise<{ readonly run: true } | { readonly run: false; readonly refusal: LimitRefusal; readonly wake: string[] }> {
    if (!executes) {
      await this.releaseAndWake();
      return { run: true };
    }
    const askedAtMs = performance.now();
    // The tool's first renewal comes a third of a lease after it starts, and must find more than a third left
    // (else it stops the tool): with less than five sixths of the lease surely left now (a slow claim, a pause;
    // a sixth to spare for timers that fire late), the slots are asked for again (the acquire renews a slot
    // still held; one that lapsed is taken anew if free), so no tool starts on a slot the server may already
    // have given to another call, or that its first renewal would give up.
    const renewAll = askedAtMs > this.heldUntil - (5 * this.leaseMs) / 6;
    const missing = renewAll ? this.slots : this.slots.filter((slot) => !slot.own);
    if (missing.length === 0) return { run: true };
    const heldAlready = missing.length < this.slots.length;
    const placeMs = placeMsOf(this.leaseMs);
    // Under this job, as at the gate: a cap that waits keeps the call's place for it (the acquire writes the
    // place's job anew), and the release that frees a slot wakes it.
    const waker = this.options.waker;
    const answers = await Promise.allSettled(
      missing.map((slot) => this.store.acquire(slot.request, { leaseMs: this.leaseMs, placeMs, waker, adopt: true })),
    );
    answers.forEach((answer, i) => {
      const slot = missing[i]!;
      // Granted: the acquire took the call out of its line too. Full: not held (an own slot asked for again had
      // lapsed and been taken), and a cap that waits kept the call a place.
      if (answer.status === 'fulfilled' && answer.value.kind === 'granted') Object.assign(slot, { own: true, placed: false });
      else if (answer.status === 'fulfilled') Object.assign(slot, { own: false, placed: slot.placed || keptPlace(slot.request, answer) });
    });
    // Surely held until the earliest lease: those held already, and those taken now.
    this.heldUntil = heldAlready ? Math.min(this.heldUntil, askedAtMs + this.leaseMs) : askedAtMs + this.leaseMs;
    const full = answers.flatMap((a, i) =>
      a.status === 'fulfilled' && a.value.kind === 'full' ? [{ cap: missing[i]!.request.cap, answer: a.value }] : [],
    );
    const failed = answers.find((a) => a.status === 'rejected');
    if (failed !== undefined) throw await this.releasedFor(failed.reason);
    if (full.length === 0) return { run: true };
    const refusal = this.refusal ?? capRefusal(full[0]!.cap, full[0]!.answer, this.leaseMs);
    const wake = await this.release(refusal.onLimit === 'wait');
    return { run: false, refusal, wake };
  }

  /**
   * Frees what this delivery holds (its places in line given up) before
   * `error` goes on to the caller, waking the jobs whose turn that gave
   * through the options' `wake`; answers `error`.
   */
  async releasedFor(error: unknown): Promise<unknown> {
    await this.releaseAndWake();
    return error;
  }

  /** Frees what this delivery holds, its places given up, and wakes through the options' `wake` the jobs whose turn came. */
  private async releaseAndWake(): Promise<void> {
    const wake = await this.release();
    if (wake.length > 0) await this.options.wake?.(wake).catch(() => undefined);
  }

  /**
   * Renews every slot this delivery holds, sent with a heartbeat of its
   * attempt. `false` when one is no longer held (its lease passed, or
   * another delivery adopted it), or, at once, without waiting for Redis,
   * when this renewal is sent with no more than a third of a lease surely
   * left (renewals failed or came late, so a lease may pass before the
   * next, and a reply from a server out of reach comes only at the
   * command's deadline): the attempt is then asked to stop. It renews all
   * the same while the server still holds its slots, so a tool that does
   * not stop at once stays counted as long as it can be.
   */
  renew(): boolean | Promise<boolean> {
    const own = this.slots.filter((slot) => slot.own);
    if (own.length === 0) return true;
    const sentAtMs = performance.now();
    const late = sentAtMs >= this.heldUntil - this.leaseMs / 3;
    const renewed = Promise.allSettled(own.map((slot) => this.store.renew(slot.request, this.leaseMs))).then((answers) => {
      if (answers.some((a) => a.status === 'fulfilled' && !a.value)) return false;
      if (answers.every((a) => a.status === 'fulfilled')) this.heldUntil = sentAtMs + this.leaseMs;
      return true;
    });
    return late ? false : renewed;
  }

  /**
   * The attempt ended. Its slots are freed only when its receipt is settled
   * (completed or failed): an attempt left running (abandoned, or of an
   * outcome unknown: ambiguous) holds its slots until their leases pass.
   * `completed`: the attempt's own complete settled the receipt, so it is
   * not read again. Answers the jobs to wake.
   */
  async ended(completed = false): Promise<string[]> {
    if (!this.slots.some((slot) => slot.own)) return [];
    if (!completed) {
      const { status } = await this.limits.boundOn(this.receiptKey, []).catch(() => ({ status: 'running' }));
      if (status === 'running') return [];
    }
    return await this.release();
  }

  /**
   * Frees every slot this delivery holds, and gives up the places in line
   * it kept unless `keepPlaces` (the call is parked to come back for them);
   * answers the jobs first in line that a slot is free for now, to wake.
   * A place this delivery did not keep is left alone: a place names the
   * job, not the delivery, so an earlier delivery of the same job (one that
   * stalled while this job came back and took a place) must not give up
   * the place of the delivery that is waiting in it.
   */
  async release(keepPlaces = false): Promise<string[]> {
    const waker = this.options.waker;
    const freeing = this.slots.flatMap((slot) => {
      const leaving = slot.placed && !keepPlaces && waker !== '';
      if (!slot.own && !leaving) return [];
      Object.assign(slot, { own: false, placed: slot.placed && keepPlaces });
      return [this.store.release(slot.request, leaving ? waker : '')];
    });
    const freed = await Promise.allSettled(freeing);
    return freed.flatMap((f) => (f.status === 'fulfilled' ? f.value.wake : []));
  }
}
