/**
 * The limits' counts on Redis: reserve a share of a window before a call
 * executes, bind it to the attempt that executes, commit it or give it
 * back, settle the reservations no claim took, read and reset a count. Each
 * step is one script on one hash tag (the limit's, or the run's), so the
 * counts are exact on a Redis Cluster where a tenant's limit lives in
 * another slot than its runs; docs/limits.md walks through the protocol.
 * Its answers, and the reading of the scripts' replies, are in `./answers.ts`.
 * Over 300 lines: one method per step of the protocol, kept together
 * so the protocol reads in one place.
 */
import { randomToken } from '../redis/receipts/transitions/claim.js';
import { assertWellFormedNames, type ToolCallReceiptKey } from '../core/identity.js';
import { checkOptions, MAX_TIMER_MS, wholeNumber, type OptionsSchema } from '../core/options.js';
import { AuditLog, type AuditAction } from '../redis/operators/audit-log.js';
import type { RedisConnection } from '../redis/connection/connection.js';
import type { DurabilityOptions } from '../redis/durability/durability.js';
import { InvalidReceiptInputError, type AttemptFence } from '../redis/errors.js';
import { receiptRedisKey } from '../redis/keys.js';
import { connectionOption, KEYSPACE_OPTION_RULES } from '../redis/options.js';
import { ReceiptsChannel } from '../redis/receipts/channel.js';
import { keyspaceSettings } from '../redis/settings.js';
import { CapStore } from './cap-store.js';
import type { Limit } from './definitions.js';
import { LimitIndex } from './limit-index.js';
import { checkedSubject, limitBindingField, limitBindingsRedisKey, limitRedisKeys, type LimitKeys, type LimitSubject } from './keys.js';
import {
  codeOf,
  parseReserve,
  parseReset,
  parseUsage,
  type BindResult,
  type Expired,
  type LimitReservation,
  type LimitResetBy,
  type LimitUsage,
  type ReserveResult,
  type SettledReservation,
} from './answers.js';

export type { BindResult, LimitReservation, LimitResetBy, LimitUsage, ReserveResult, SettledReservation } from './answers.js';

/** How a {@link LimitStore} talks to Redis. */
export interface LimitStoreOptions {
  /** An ioredis `Redis` or `Cluster`, or a node-redis client: the receipts' own. */
  redis: RedisConnection;
  /** Key prefix, default `trc`: the receipt store's, since a reservation names its receipt. */
  prefix?: string;
  /**
   * How long a granted reservation waits for its claim, in ms, before
   * whoever next touches the limit may settle it: given back when no attempt
   * was bound to it, committed when one was. Default 30 000. Shorter frees
   * the share of a worker that died sooner; a claim slower than this finds
   * its reservation revoked and runs nothing under it.
   */
  reservationMs?: number;
  /**
   * The workers' `durability`: each count write is then acknowledged only
   * once the replicas (or the AOF) have it, so a failover cannot forget a
   * commit and admit more than the limit. Off by default.
   */
  durability?: DurabilityOptions;
  /** The deadline of each command, as the workers' `commandTimeoutMs`; default 5,000 ms. */
  commandTimeoutMs?: number;
}

/** The rule of each {@link LimitStoreOptions} option. */
export const LIMIT_STORE_SCHEMA: OptionsSchema<LimitStoreOptions> = {
  redis: connectionOption,
  prefix: KEYSPACE_OPTION_RULES.prefix,
  reservationMs: wholeNumber(1, 'ms', MAX_TIMER_MS),
  durability: KEYSPACE_OPTION_RULES.durability,
  commandTimeoutMs: KEYSPACE_OPTION_RULES.commandTimeoutMs,
};

/** Default {@link LimitStoreOptions.reservationMs}: 30 s. */
export const DEFAULT_RESERVATION_MS = 30_000;
/** Expired reservations one reserve or read reports for settling. */
const EXPIRED_PER_CALL = 16;
/** Reserves tried in one {@link LimitStore.reserve} when settling decided shares (the first included). */
const RESERVE_ROUNDS = 3;
/** Rounds of one {@link LimitStore.settleExpired} (each settles up to EXPIRED_PER_CALL). */
const SETTLE_ROUNDS = 64;

/** The audit action of a reset (the audit log records it like an operator's other writes). */
const LIMIT_RESET: AuditAction = 'limit-reset';

/**
 * The counts of the limits of one key prefix. Every method is one or a few
 * scripts, each on the keys of one hash tag; none compares the clocks of
 * two servers. Errors: a key of the wrong type or a state that does not
 * parse throws `receipt.corrupt` (nothing written), Redis not answering
 * `redis.timeout` or `redis.unavailable`.
 */
export class LimitStore {
  readonly prefix: string;
  readonly reservationMs: number;
  /** Every count write goes through it: one error mapping, and the durability the keyspace asks for. */
  private readonly channel: ReceiptsChannel;
  private readonly audit: AuditLog;
  /** The index of this prefix's counts, which operators' listings read. */
  readonly index: LimitIndex;
  /** The slots of this prefix's in-flight caps, on the same channel. */
  readonly caps: CapStore;

  /**
   * Throws `options.invalid` (or `redis.invalid_connection`) for options it
   * cannot use. Given a receipts keyspace's channel instead, it counts on
   * that channel's connection and prefix, its options already checked.
   */
  constructor(options: LimitStoreOptions | { readonly channel: ReceiptsChannel; readonly reservationMs?: number | undefined }) {
    if ('channel' in options) {
      this.channel = options.channel;
    } else {
      checkOptions('LimitStore', options, LIMIT_STORE_SCHEMA);
      this.channel = new ReceiptsChannel(options.redis, keyspaceSettings(options), 'LimitStore');
    }
    this.prefix = this.channel.settings.prefix;
    this.reservationMs = options.reservationMs ?? DEFAULT_RESERVATION_MS;
    this.audit = new AuditLog(this.channel.redis, this.prefix);
    this.index = new LimitIndex(this.channel, this.prefix);
    this.caps = new CapStore(this.channel, this.prefix, this.index);
  }

  /** The keys of `limit`'s count for `subject` (its tenant, its run, or none for a global limit). */
  keysOf(limit: Limit, subject: LimitSubject): LimitKeys {
    return limitRedisKeys(this.prefix, limit, checkedSubject(limit, subject));
  }

  /**
   * Reserves `amount` (1, or the call's cost: a whole number, at least 1) of
   * `limit`'s current window for the call `key`, when it fits with what is
   * used and reserved. Settles the expired reservations the reserve reports
   * ({@link settleExpired}), and when that decides any (given back or
   * counted) and this one did not fit, asks again (at most twice more).
   */
  async reserve(limit: Limit, key: ToolCallReceiptKey, amount = 1): Promise<ReserveResult> {
    if (!Number.isSafeInteger(amount) || amount < 1)
      throw new InvalidReceiptInputError(`a reservation's amount must be a whole number, at least 1; got ${amount}`);
    assertWellFormedNames({ 'tool name': key.toolName, 'args hash': key.argsHash });
    const keys = this.keysOf(limit, key);
    const receiptKey = receiptRedisKey(this.prefix, key);
    const bindingsKey = limitBindingsRedisKey(this.prefix, key.tenantId, key.runId);
    const id = randomToken();
    const settled: SettledReservation[] = [];
    for (let round = 1; ; round++) {
      const args = [
        id,
        amount,
        limit.max,
        limit.windowMs,
        this.reservationMs,
        receiptKey,
        bindingsKey,
        limit.name,
        EXPIRED_PER_CALL,
        ...kindArgs(limit),
      ];
      const reply = parseReserve(await this.call('limit-reserve', keyList(keys), args), limit);
      await this.index.keep(keys.state, reply.keptUntilMs, reply.usage.nowMs, limit.windowMs);
      const now = await this.settleAll(limit, keys, reply.expired, 'skip failures');
      settled.push(...now);
      if (reply.code === 1) {
        const reservation: LimitReservation = {
          id: reply.id,
          reused: reply.reused,
          limit: limit.name,
          kind: limit.kind,
          keys,
          receiptKey,
          bindingsKey,
          bindingField: limitBindingField(limit.name),
          bindingsKeepMs: this.bindingsKeepMs(limit),
          amount,
          deadlineMs: reply.deadlineMs,
          windowStartMs: reply.usage.windowStartMs,
        };
        return { granted: true, reservation, usage: reply.usage, settled };
      }
      // A settle decided shares (given back, or counted for a call that runs): ask again, so the answer reads
      // the window as it now is (room, or counted until its reset) rather than shares about to be decided.
      if (reply.code === 2 || round >= RESERVE_ROUNDS || now.length === 0) {
        if (reply.code === 2) return { granted: false, why: 'exceeds_max', usage: reply.usage, retryAtMs: null, settled };
        return { granted: false, why: reply.held ? 'held' : 'full', usage: reply.usage, retryAtMs: reply.retryAtMs, settled };
      }
    }
  }

  /**
   * Records `reservation` on the running attempt of its receipt, unless a
   * settle revoked it (see {@link BindResult}). With `epoch`, only the
   * attempt a claim that minted it created is bound (else `not_running`,
   * nothing written): the wrapper sends such a bind right behind the claim.
   */
  async bind(reservation: LimitReservation, epoch?: string): Promise<BindResult> {
    const args = bindArgs(reservation);
    if (epoch !== undefined) args.push(epoch);
    const reply = await this.call('limit-bind', [reservation.receiptKey, reservation.bindingsKey], args, epoch !== undefined);
    const code = codeOf('limit-bind', reply, [0, 1, 2, 3]);
    if (code === 1) return { kind: 'bound' };
    if (code === 0) return { kind: 'revoked' };
    if (code === 2) return { kind: 'counted', by: String(reply[1]) };
    return { kind: 'not_running' };
  }

  /** Counts `reservation` as used: its call executed. `unknown` when it was given back first (then it stays uncounted). */
  async commit(reservation: Pick<LimitReservation, 'id' | 'keys'>): Promise<'committed' | 'already_committed' | 'unknown'> {
    const reply = await this.call('limit-commit', keyList(reservation.keys), [reservation.id]);
    const code = codeOf('limit-commit', reply, [0, 1, 2]);
    // Counted from now (a sliding window, a bucket): listed as long as the count is kept now.
    if (code === 1 && reply.length === 4) {
      const [keptUntilMs, nowMs, usedUntilMs] = reply.slice(1).map(Number) as [number, number, number];
      await this.index.extend(reservation.keys.state, keptUntilMs, nowMs, usedUntilMs);
    }
    return code === 1 ? 'committed' : code === 2 ? 'already_committed' : 'unknown';
  }

  /**
   * Gives `reservation` back to its window: what it was (`pending` or
   * `committed`), or `unknown` when given back already or its window is over.
   * Use it for a reservation no attempt was bound to; {@link giveBack} for
   * one that may have been.
   */
  async release(reservation: Pick<LimitReservation, 'id' | 'keys'>): Promise<'pending' | 'committed' | 'unknown'> {
    const code = codeOf('limit-release', await this.call('limit-release', keyList(reservation.keys), [reservation.id]), [0, 1, 2]);
    return code === 1 ? 'pending' : code === 2 ? 'committed' : 'unknown';
  }

  /**
   * Gives back a reservation whose attempt never started: takes it off the
   * receipt and revokes it on the run's side (so a settle can no longer
   * commit it), then releases it. Whether it was bound, and what the release
   * found. With `fence`, the attempt giving it back: a receipt that has
   * moved on since (another attempt took the call over, counted by this
   * reservation, or another lifetime began), or a binding of it made for
   * another attempt, keeps it, and the answer is `kept`, nothing written.
   */
  async giveBack(
    reservation: LimitReservation,
    fence?: AttemptFence,
  ): Promise<{ wasBound: boolean; released: 'pending' | 'committed' | 'unknown' | 'kept' }> {
    const args = bindArgs(reservation);
    if (fence !== undefined) args.push(fence.attempt, fence.epoch);
    const reply = await this.call('limit-unbind', [reservation.receiptKey, reservation.bindingsKey], args);
    const code = codeOf('limit-unbind', reply, [0, 1, 2]);
    if (code === 2) return { wasBound: true, released: 'kept' };
    return { wasBound: code === 1, released: await this.release(reservation) };
  }

  /**
   * Decides what becomes of a reservation its holder will not bind (the
   * claim did not execute, or another limit refused the call), on the run's
   * side, so that no other holder of the same reservation (a delivery of the
   * same call that reused it) loses a share it bound or is about to bind:
   * committed when an attempt of its receipt is bound to it, or is running
   * without a reservation of this limit (claimed under it, its bind not yet
   * made); otherwise revoked there and given back. The settle of a
   * reservation past its deadline is the same decision.
   */
  async settle(
    reservation: Pick<LimitReservation, 'id' | 'keys' | 'bindingsKey' | 'receiptKey' | 'bindingField' | 'bindingsKeepMs'>,
  ): Promise<SettledReservation> {
    const { id, keys } = reservation;
    const reply = await this.call(
      'limit-settle',
      [reservation.bindingsKey, reservation.receiptKey],
      [id, reservation.bindingsKeepMs, reservation.bindingField],
    );
    if (codeOf('limit-settle', reply, [0, 1, 2]) === 1) {
      await this.commit({ id, keys });
      return { id, outcome: 'committed' };
    }
    await this.release({ id, keys });
    return { id, outcome: 'given_back' };
  }

  /**
   * Settles `limit`'s reservations for `subject` that are still pending past
   * their deadline: each bound to an attempt is committed, each other one
   * revoked on its run's side and given back. Reserving does this too, for
   * what it meets; this is for a sweep, or before reading a count.
   */
  async settleExpired(limit: Limit, subject: LimitSubject): Promise<SettledReservation[]> {
    const keys = this.keysOf(limit, subject);
    const settled: SettledReservation[] = [];
    for (let round = 0; round < SETTLE_ROUNDS; round++) {
      const { expired } = parseUsage(await this.call('limit-usage', keyList(keys), usageArgs(limit, EXPIRED_PER_CALL)), limit);
      settled.push(...(await this.settleAll(limit, keys, expired)));
      if (expired.length < EXPIRED_PER_CALL) break;
    }
    return settled;
  }

  /** `limit`'s count for `subject` in the current window, on the server clock. */
  async usage(limit: Limit, subject: LimitSubject): Promise<LimitUsage> {
    return parseUsage(await this.call('limit-usage', keyList(this.keysOf(limit, subject)), usageArgs(limit, 0)), limit).usage;
  }

  /**
   * An operator's reset of `limit`'s current window for `subject`: what it
   * counted as used is forgotten (pending reservations stay counted), and
   * the reset is recorded in the audit log with who did it. Resolves to what
   * was used before, the count after, and the audit entry's id.
   */
  async reset(limit: Limit, subject: LimitSubject, by: LimitResetBy): Promise<{ usedBefore: number; usage: LimitUsage; auditId: string }> {
    const keys = this.keysOf(limit, subject);
    const args = [limit.windowMs, limit.max, limit.name, ...kindArgs(limit)];
    const { usedBefore, usage } = parseReset(await this.call('limit-reset', keyList(keys), args), limit);
    const auditId = await this.audit.append({
      actor: by.actor,
      source: by.source,
      action: LIMIT_RESET,
      receipts: [],
      detail: {
        limit: limit.name,
        per: limit.per,
        tenantId: subject.tenantId,
        runId: subject.runId,
        usedBefore,
        windowStartMs: usage.windowStartMs,
        resetsAtMs: usage.resetsAtMs,
      },
    });
    return { usedBefore, usage, auditId };
  }

  /**
   * What the receipt `receiptKey` holds for the limits `names`: its status
   * (`null` when there is none) and which of them its lifetime is counted by
   * (a reservation bound in its `limit:<name>` field). One read, no write.
   */
  async boundOn(receiptKey: string, names: readonly string[]): Promise<{ status: string | null; bound: Set<string> }> {
    const reply = await this.channel.command('HMGET', [receiptKey, 'status', ...names.map(limitBindingField)], receiptKey);
    const [status, ...held] = Array.isArray(reply) ? (reply as unknown[]) : [];
    const bound = new Set(names.filter((_, i) => typeof held[i] === 'string' && held[i] !== ''));
    return { status: typeof status === 'string' ? status : null, bound };
  }

  /** How long a bind or settle keeps a run's bindings: as long as any settle of `limit` may ask (see keepLimit in lua/includes/limit-state.lua). */
  private bindingsKeepMs(limit: Limit): number {
    return 2 * limit.windowMs + this.reservationMs;
  }

  /**
   * Settles each of `expired`, side by side. A reserve settles what it met
   * as a courtesy and must not fail for it (`'skip failures'`: one that
   * fails stays pending, and the next reserve or sweep meets it again); a
   * sweep throws the first failure.
   */
  private async settleAll(
    limit: Limit,
    keys: LimitKeys,
    expired: readonly Expired[],
    failures: 'throw' | 'skip failures' = 'throw',
  ): Promise<SettledReservation[]> {
    const settleOne = (expired: Expired): Promise<SettledReservation> =>
      this.settle({ ...expired, keys, bindingField: limitBindingField(limit.name), bindingsKeepMs: this.bindingsKeepMs(limit) });
    if (failures === 'throw') return Promise.all(expired.map(settleOne));
    const outcomes = await Promise.allSettled(expired.map(settleOne));
    return outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
  }

  /**
   * Runs a limit script through the channel: a corrupt key becomes
   * `receipt.corrupt`, Redis not answering `redis.timeout` or
   * `redis.unavailable`, and every script but the read (`limit-usage`)
   * waits for the durability the keyspace asks for. `behind`: sent right
   * behind the script call made before it in this tick.
   */
  private async call(
    script: string,
    keys: readonly [string, ...string[]],
    args: readonly (string | number)[],
    behind = false,
  ): Promise<unknown[]> {
    const reply =
      script === 'limit-usage'
        ? await this.channel.call(script, keys, args)
        : await this.channel.write('limit', script, keys, args, behind ? BEHIND : {});
    return Array.isArray(reply) ? reply : [reply];
  }
}

/** A bind sent right behind its claim (see {@link LimitStore.bind}). */
const BEHIND = { behind: true } as const;
const keyList = (keys: LimitKeys): [string, string, string] => [keys.state, keys.due, keys.done];
/** How the window moves, as the scripts that judge it take it: the kind, and a bucket's burst ('' for the others). */
const kindArgs = (limit: Limit): [string, string | number] => [limit.kind, limit.burst ?? ''];
const usageArgs = (limit: Limit, expired: number) => [limit.windowMs, expired, limit.kind, limit.max, limit.burst ?? ''];
const bindArgs = (r: LimitReservation): (string | number)[] => [r.id, r.bindingField, r.bindingsKeepMs];
