/**
 * Durability of receipt writes across a Redis failover or crash.
 *
 * Redis acknowledges a write once the primary has it in memory; replication
 * and the AOF fsync follow later. A claim lost that way lets the next
 * delivery run the effect again. With a {@link DurabilityOptions} a store
 * follows each write that matters with `WAIT` (replicas) or `WAITAOF` (fsync,
 * Redis ≥ 7.2), sent on the very connection that carried the write, to the
 * node that owns the run's slot.
 */
import { describeFailure, DurabilityUnsupportedError, ReceiptNotDurableError, type DurableWrite } from './errors.js';
import {
  booleanOption,
  checkOptions,
  InvalidOptionsError,
  MAX_TIMER_MS,
  required,
  wholeNumber,
  type OptionRule,
  type OptionSite,
  type OptionsSchema,
} from '../../core/options.js';
import { isReplyError } from '../connection/clients/commands.js';
import { unreachableErrorOf } from '../connection/unreachable.js';
import { receiptsConnection, type ReceiptsConnection, type ReceiptsNode, type RedisConnection } from '../connection/connection.js';

// The errors live in errors.ts; exported here too, where every caller has always imported them from.
export { DurabilityUnsupportedError, ReceiptNotDurableError, type DurableWrite };

/** What a receipt write must reach before the store reports it done. */
export interface DurabilityOptions {
  /**
   * Replicas that must have acknowledged the write (`WAIT`). With 1, a
   * failover to any replica that acknowledged keeps the receipt.
   */
  readonly replicas: number;
  /** Longest wait for the acknowledgements, in ms. Default 1000. Must be positive (`WAIT 0` would block forever). */
  readonly timeoutMs?: number;
  /**
   * Also wait until the primary and `replicas` replicas have fsynced the write
   * to their AOF (`WAITAOF`, Redis ≥ 7.2, `appendonly yes`). On an older
   * server every claim is refused with {@link DurabilityUnsupportedError}.
   */
  readonly aof?: boolean;
}

/** Default of {@link DurabilityOptions.timeoutMs}. */
export const DEFAULT_DURABILITY_TIMEOUT_MS = 1000;

/**
 * The durability options are malformed (negative replicas, a zero timeout,
 * nothing asked for). The same class as every refused option
 * ({@link InvalidOptionsError}, code `options.invalid`); this name is kept so
 * existing `instanceof` checks still hold.
 */
export const InvalidDurabilityOptionsError = InvalidOptionsError;
/** See the constant of the same name. */
export type InvalidDurabilityOptionsError = InvalidOptionsError;

const DURABILITY_SCHEMA: OptionsSchema<DurabilityOptions> = {
  replicas: required(wholeNumber(0, 'replicas')),
  // WAIT 0 would block forever; a WAIT longer than a safe integer of ms is no bound at all.
  timeoutMs: wholeNumber(1, 'ms'),
  aof: booleanOption,
};

/**
 * Checks durability options and fills in defaults; throws
 * {@link InvalidOptionsError} naming `site` (who was given them, and under
 * which option name; by default the `durability` option of `durability`).
 */
export function durabilityOptions(
  options: DurabilityOptions,
  site: OptionSite = { owner: 'durability', option: 'durability' },
): Required<DurabilityOptions> {
  checkOptions(site.owner, options, DURABILITY_SCHEMA, site.option);
  const filled = filledDurability(options);
  if (filled.replicas === 0 && !filled.aof) {
    throw new InvalidOptionsError(
      site.owner,
      site.option,
      `\`${site.option}\` asks for nothing: pass replicas ≥ 1, or aof: true, or leave ${site.option} out`,
    );
  }
  return filled;
}

/** Durability options a schema has already checked, with defaults filled in and frozen (no second check). */
export function filledDurability(options: DurabilityOptions): Required<DurabilityOptions> {
  const { replicas, timeoutMs = DEFAULT_DURABILITY_TIMEOUT_MS, aof = false } = options;
  return Object.freeze({ replicas, timeoutMs, aof });
}

/** The `durability` option of a store or the wrapper: checked by {@link durabilityOptions}. */
export const durabilityOption: OptionRule = { check: (value, site) => void durabilityOptions(value as DurabilityOptions, site) };

/** Connection closes seen per node: a WAIT sent on a newer connection than its write proves nothing. */
const closes = new WeakMap<ReceiptsNode, { count: number }>();

function closeCounter(node: ReceiptsNode): { count: number } {
  let counter = closes.get(node);
  if (!counter) {
    const created = { count: 0 };
    node.onClose(() => void (created.count += 1));
    closes.set(node, created);
    counter = created;
  }
  return counter;
}

/** Whether the server knows `WAITAOF` (`COMMAND INFO` answers `nil` for an unknown command). */
export async function hasWaitAof(node: RedisConnection | ReceiptsNode): Promise<boolean> {
  const server =
    typeof (node as Partial<ReceiptsNode>).onClose === 'function' ? (node as ReceiptsNode) : receiptsConnection(node as RedisConnection);
  const info = (await server.command('COMMAND', ['INFO', 'WAITAOF'])) as unknown[];
  return Array.isArray(info) && info[0] !== null && info[0] !== undefined;
}

/**
 * The typed error of a `WAITAOF` support check that failed: Redis not
 * answering (retryable), or a refusal of `COMMAND INFO` (an ACL without it),
 * which leaves WAITAOF's support unknown, so `aof` cannot be given.
 */
function checkFailure(error: unknown, redisKey: string): unknown {
  const unreachable = unreachableErrorOf(error, { redisKey, step: 'waitaofCheck' });
  if (unreachable !== error || !isReplyError(error)) return unreachable;
  return new DurabilityUnsupportedError(
    `durability.aof needs WAITAOF, but the server refused COMMAND INFO, so its support cannot be checked (${describeFailure(error)})`,
    { cause: error },
  );
}

/** A write made through a node, and the connection generation it was made on. */
export interface WriteMark {
  readonly node: ReceiptsNode;
  readonly generation: number;
}

/**
 * What one WAIT (or WAITAOF) answered; `failure` is what it threw instead of
 * answering (then `ok` is false and nothing is counted).
 */
export type Acknowledgement = { ok: boolean; replicas: number; localFsync?: boolean; failure?: unknown };

/**
 * Waits for a store's writes to be acknowledged as its options ask. Use
 * {@link mark} right after the write's reply (before any other await), then
 * {@link acknowledged}.
 *
 * The writes acknowledged in one tick share one WAIT per node, sent at the
 * end of the tick: WAIT covers every write its connection made before it,
 * and each of them had its reply (so was made) before the WAIT goes out. A
 * busy worker then holds its connection for one replica round trip per tick
 * instead of one per write.
 */
export class DurabilityWaiter {
  readonly options: Required<DurabilityOptions>;
  private supported: Promise<void> | undefined;
  /** Per node, the WAIT the writes of this tick will share, until it is sent. */
  private readonly unsent = new Map<ReceiptsNode, Promise<Acknowledgement>>();

  private readonly redis: ReceiptsConnection;

  /** `options` are checked already (a store's schema did it), so they are not parsed again here. */
  constructor(connection: ReceiptsConnection, options: Required<DurabilityOptions>) {
    this.options = options;
    // A WAIT is answered once its own timeout has run: the store's deadline counts from then.
    const deadline = connection.deadlineMs;
    this.redis = deadline === undefined ? connection : connection.withDeadline(Math.min(deadline + this.options.timeoutMs, MAX_TIMER_MS));
  }

  /**
   * Resolves when the server can give what the options ask; rejects with
   * {@link DurabilityUnsupportedError}, or, when the check itself got no
   * answer, with `RedisTimeoutError` / `RedisConnectionLostError` naming
   * `redisKey` (the write about to be made). Asked once while the answer is
   * yes; a no or a failed check is asked again by the next write.
   */
  ready(redisKey = ''): Promise<void> {
    if (!this.options.aof) return Promise.resolve();
    if (this.supported !== undefined) return this.supported;
    const check: Promise<void> = hasWaitAof(this.redis).then(
      (yes) => {
        if (yes) return;
        this.forget(check); // look again next time: the server may be upgraded behind a failover
        throw new DurabilityUnsupportedError(
          'durability.aof needs WAITAOF (Redis 7.2 or later), which this server does not have; ' +
            'drop aof and run Redis with appendonly yes and appendfsync always, or upgrade Redis',
        );
      },
      (error: unknown) => {
        // A check that failed says nothing of the server: kept, it would refuse every later write with this same error.
        this.forget(check);
        throw checkFailure(error, redisKey);
      },
    );
    this.supported = check;
    return check;
  }

  /** Drops a support check that did not answer yes, unless a newer one replaced it already. */
  private forget(check: Promise<void>): void {
    if (this.supported === check) this.supported = undefined;
  }

  /** The node a write to `key` went through, and its connection generation now. */
  mark(key: string): WriteMark | undefined {
    const node = this.redis.nodeFor(key);
    return node ? { node, generation: closeCounter(node).count } : undefined;
  }

  /** Waits for the acknowledgements; throws {@link ReceiptNotDurableError} when they fall short. */
  async require(write: DurableWrite, redisKey: string, mark: WriteMark | undefined): Promise<void> {
    const ack = await this.acknowledged(mark);
    if (!ack.ok) throw this.refusal(write, redisKey, ack);
  }

  /** The error for a write whose acknowledgement `ack` fell short, its WAIT's failure as the cause. */
  refusal(write: DurableWrite, redisKey: string, ack: Acknowledgement): ReceiptNotDurableError {
    return new ReceiptNotDurableError(redisKey, write, ack, this.options, ack.failure);
  }

  /**
   * Waits for the acknowledgements. Resolves to what was acknowledged and
   * whether that is enough; never rejects. A connection that closed since
   * the write, a node that cannot be found, or a WAIT that failed (no reply
   * in time, a closed connection) counts as not acknowledged.
   */
  async acknowledged(mark: WriteMark | undefined): Promise<Acknowledgement> {
    if (!mark || !mark.node.ready) return { ok: false, replicas: 0 };
    const result = await this.sharedWait(mark.node);
    if (closeCounter(mark.node).count !== mark.generation) return { ...result, ok: false };
    return result;
  }

  /** The WAIT of this tick on `node`, joined by every write acknowledged before it is sent. */
  private sharedWait(node: ReceiptsNode): Promise<Acknowledgement> {
    let wait = this.unsent.get(node);
    if (wait === undefined) {
      wait = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        // Sent now: a write acknowledged from here on waits for a WAIT of its own.
        this.unsent.delete(node);
        // Every write of the tick shares this answer: a WAIT that fails leaves each of them unacknowledged, none with a raw error.
        return this.waitOn(node).catch((failure: unknown): Acknowledgement => ({ ok: false, replicas: 0, failure }));
      });
      this.unsent.set(node, wait);
    }
    return wait;
  }

  private async waitOn(node: ReceiptsNode): Promise<Acknowledgement> {
    const { replicas, timeoutMs, aof } = this.options;
    if (aof) {
      const [local, remote] = (await node.command('WAITAOF', [1, replicas, timeoutMs])) as [number, number];
      return { ok: local >= 1 && remote >= replicas, replicas: remote, localFsync: local >= 1 };
    }
    const count = Number(await node.command('WAIT', [replicas, timeoutMs]));
    return { ok: count >= replicas, replicas: count };
  }
}
