/**
 * The slots of in-flight caps on Redis: take one for a call (or keep its
 * place in line), renew its lease with the attempt's heartbeats, free it at
 * the settle (naming the jobs first in line to wake), and read a cap. Each
 * step is one script on the cap's own three keys (one hash tag), on the
 * server's clock, written through the receipts' channel; docs/limits.md
 * (in-flight caps) says what holds.
 */
import { UnexpectedScriptReplyError } from '../redis/errors.js';
import type { ReceiptsChannel } from '../redis/receipts/channel.js';
import type { InFlightCap } from './caps.js';
import { capRedisKeys, type CapKeys, type LimitSubject } from './keys.js';
import type { LimitIndex } from './limit-index.js';

/** What {@link CapStore.acquire} answers. */
export type SlotAnswer =
  /** The asker holds a slot until `deadlineMs` (server clock). */
  | { readonly kind: 'granted'; readonly nowMs: number; readonly deadlineMs: number; readonly held: number }
  /** Another delivery of the same call holds the call's slot: its attempt may be running. */
  | { readonly kind: 'shared'; readonly nowMs: number; readonly held: number }
  /**
   * Every slot is taken (or the free ones go to calls ahead in line).
   * `position`: calls ahead of it in line, -1 when it took no place
   * (`refuse`); `retryAtMs`: when a slot frees at the latest, the earliest
   * lease deadline of a holder (a lease from now when none is held: the
   * free slots are kept for calls ahead in line).
   */
  | { readonly kind: 'full'; readonly nowMs: number; readonly held: number; readonly position: number; readonly retryAtMs: number };

/** One cap's slots as an operator reads them, on the server clock. */
export interface CapUsage {
  readonly nowMs: number;
  /** k, as the cap was last asked with (0 when never). */
  readonly concurrency: number;
  /** Slots held by live leases. */
  readonly held: number;
  /** Calls waiting in line for a slot. */
  readonly waiting: number;
  /** When the earliest live lease passes if its holder stops renewing; `null` when none is held. */
  readonly nextLapseMs: number | null;
}

/** One call's asking for a slot of one cap. */
export interface SlotRequest {
  readonly cap: InFlightCap;
  readonly keys: CapKeys;
  /** The receipt (Redis key) of the call: one slot per call. */
  readonly receiptKey: string;
  /** This delivery's token: the holder is the receipt and the token of the delivery that holds it. */
  readonly token: string;
}

/** A reply's whole numbers, or `receipt.unexpected_reply` for any other shape. */
function numbers(script: string, reply: unknown, count: number): number[] {
  const values = Array.isArray(reply) ? reply.slice(0, count).map(Number) : [];
  if (values.length !== count || !values.every(Number.isSafeInteger)) throw new UnexpectedScriptReplyError(script, reply);
  return values;
}

/** The slots of the in-flight caps of one key prefix. */
export class CapStore {
  constructor(
    private readonly channel: ReceiptsChannel,
    readonly prefix: string,
    private readonly index: LimitIndex,
  ) {}

  /** The keys of `cap`'s slots for `subject` (its tenant, its run, or none for a global cap). */
  keysOf(cap: InFlightCap, subject: LimitSubject): CapKeys {
    return capRedisKeys(this.prefix, cap, subject);
  }

  /**
   * Takes a slot for `request`, or (`onLimit: 'wait'`) keeps its place in
   * line with `waker`, the job to wake when its turn comes, for `placeMs`.
   * `adopt`: the asker's attempt is about to execute, so a slot another
   * delivery of the call holds becomes its own.
   */
  async acquire(request: SlotRequest, options: { leaseMs: number; placeMs: number; waker: string; adopt: boolean }): Promise<SlotAnswer> {
    const { cap, keys } = request;
    const args = [
      request.receiptKey,
      cap.concurrency,
      options.leaseMs,
      cap.onLimit,
      options.waker,
      options.placeMs,
      cap.name,
      request.token,
      options.adopt ? '1' : '0',
    ];
    const reply = await this.channel.write('limit', 'limit-slot-acquire', keyList(keys), args);
    const [code, nowMs, deadlineMs, held, position, retryAtMs] = numbers('limit-slot-acquire', reply, 6) as [
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    // Listed for operators as a window's count is, kept about as long as its keys.
    await this.index.keep(keys.state, nowMs + options.placeMs + options.leaseMs, nowMs, options.placeMs);
    if (code === 1) return { kind: 'granted', nowMs, deadlineMs, held };
    if (code === 3) return { kind: 'shared', nowMs, held };
    if (code === 0) return { kind: 'full', nowMs, held, position, retryAtMs };
    throw new UnexpectedScriptReplyError('limit-slot-acquire', reply);
  }

  /** Extends the lease of a slot `request`'s delivery holds: `false` when it holds it no more (its lease passed, or another delivery adopted it). */
  async renew(request: SlotRequest, leaseMs: number): Promise<boolean> {
    const reply = await this.channel.write('limit', 'limit-slot-renew', keyList(request.keys), [
      request.receiptKey,
      request.token,
      leaseMs,
    ]);
    return numbers('limit-slot-renew', reply, 3)[0] === 1;
  }

  /**
   * Frees the slot `request`'s delivery holds (a slot another delivery
   * adopted stays), and answers the jobs to wake: those first in line that
   * a slot is free for now, as their acquires named them. With `leaving`
   * (the job the call's place in line names), the call also gives up its
   * place: it will not execute, and will not come back for it.
   */
  async release(request: SlotRequest, leaving = ''): Promise<{ released: boolean; wake: string[] }> {
    const args = [request.receiptKey, request.token, ...(leaving === '' ? [] : [leaving])];
    const reply = await this.channel.write('limit', 'limit-slot-release', keyList(request.keys), args);
    const [released] = numbers('limit-slot-release', reply, 4);
    return { released: released === 1, wake: (reply as unknown[]).slice(4).map(String) };
  }

  /** `cap`'s slots for `subject`, read on the server clock. */
  async usage(cap: Pick<InFlightCap, 'name' | 'per'>, subject: LimitSubject): Promise<CapUsage> {
    const reply = await this.channel.call('limit-slot-usage', keyList(capRedisKeys(this.prefix, cap, subject)), []);
    const [nowMs, concurrency, held, waiting, nextLapseMs] = numbers('limit-slot-usage', reply, 5) as [
      number,
      number,
      number,
      number,
      number,
    ];
    return { nowMs, concurrency, held, waiting, nextLapseMs: nextLapseMs < 0 ? null : nextLapseMs };
  }
}

const keyList = (keys: CapKeys): [string, string, string] => [keys.state, keys.held, keys.line];
