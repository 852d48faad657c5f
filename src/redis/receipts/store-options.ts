/**
 * The options of a `ReceiptStore` and the rule of each, checked when the
 * store is made.
 */
import type { OptionsSchema } from '../../core/options.js';
import type { RedisConnection } from '../connection/connection.js';
import type { DurabilityOptions } from '../durability/durability.js';
import { connectionOption, KEYSPACE_OPTION_RULES } from '../options.js';
import type { ReceiptLayout } from '../settings.js';

/** How a `ReceiptStore` talks to Redis. */
export interface ReceiptStoreOptions {
  /**
   * An ioredis `Redis` or `Cluster`, or a node-redis client. Every script's
   * keys share one hash tag, so a Cluster routes each to one node.
   */
  redis: RedisConnection;
  /** Key prefix, default `trc`. Letters, digits and `. _ ~ : / -` only. */
  prefix?: string;
  /** Lease given to an attempt when a claim does not say, in ms. Default 30 000. */
  leaseMs?: number;
  /** How long a settled (or ambiguous) receipt is kept, in ms. Default 24 h. */
  retentionMs?: number;
  /** Worker id written as `owner`; default `<hostname>:<pid>:<random>`, one per store. */
  owner?: string;
  /**
   * The longest each command the store sends may go without a reply, in ms,
   * whatever the client (default 5 000): then it fails with
   * `RedisTimeoutError` (`redis.timeout`), and a claim releases what it may
   * have started. It runs from the moment the command may have been
   * written: a command the client still holds back (ioredis while it
   * reconnects) is bounded by the client, and one node-redis still has
   * queued fails as never sent. A `WAIT` for durability gets its own
   * `timeoutMs` on top. An ioredis `commandTimeout` still applies, so the
   * shorter of the two ends a command.
   */
  commandTimeoutMs?: number;
  /**
   * Wait for replicas (and, with `aof`, fsyncs) to acknowledge each write
   * that matters: a claim that starts an attempt (unacknowledged, the attempt
   * is settled as failed `neverStarted` and the claim throws
   * `ReceiptNotDurableError`), and every complete, fail, heartbeat, step and
   * resolve (unacknowledged, they throw it after writing). Off by default.
   */
  durability?: DurabilityOptions;
  /**
   * Group commit (default `true`): claims and completes that different calls
   * send while others are waiting for Redis go out together at the end of the
   * tick, as one script call that runs each exactly as alone, in order. A
   * call sent while nothing else is in flight goes out at once, so one job
   * at a time pays nothing for it. `false` sends every call on its own.
   */
  groupCommit?: boolean;
  /**
   * The layout the receipts this store creates are written in: `2` (the
   * default; 3 for a transactional tool's) or `4`, the same receipt without
   * the fields `tenant`, `run`, `tool` and `args_hash`, which its key already
   * names (less memory per receipt, a smaller write per claim). The option
   * decides only for receipts the store creates: a next attempt never turns
   * a layout-2 receipt into 4, nor a layout-4 one back. Only this release and later ones read a layout-4 receipt's names
   * (the previous release decides on it correctly, but its CLI cannot show or
   * resolve it), so turn it on only once every worker, CLI and console on the
   * prefix runs one of them (see docs/upgrading.md). Anything but `2` or `4`
   * is refused (`options.invalid`).
   */
  receiptLayout?: ReceiptLayout;
}

/** The rule of each {@link ReceiptStoreOptions} option. */
export const RECEIPT_STORE_SCHEMA: OptionsSchema<ReceiptStoreOptions> = { redis: connectionOption, ...KEYSPACE_OPTION_RULES };
